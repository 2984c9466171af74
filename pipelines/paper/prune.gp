# prune.gp: in (rows sparsity, one column per pruning order: perplexity), name, out.
load "pipelines/paper/common.gp"
n = ncols(in)
set terminal pngcairo size 900,560 font "DejaVu Sans,11"
set output out
set title name . ": held-out perplexity after pruning heads, per pruning order"
set xlabel "share of heads pruned"
set ylabel "held-out perplexity (per token)"
set xrange [-0.01:*]
# a log scale when the orders differ by more than a factor of 20 (a blow-up next to stable lines)
spread = real(system("awk -F'\t' '!/^#/ && NR > 1 { for (i = 2; i <= NF; i++) if ($i + 0 > 0) { if (!lo || $i + 0 < lo) lo = $i + 0; if ($i + 0 > hi) hi = $i + 0 } } END { print (lo > 0 ? hi / lo : 1) }' '" . in . "'"))
if (spread > 20) { set logscale y; set ylabel "held-out perplexity (per token, log scale)" }
set key top left box opaque
dtype(i) = i % 2 ? 2 : 1    # alternate dashes so that coinciding orders stay visible
plot for [i=2:n] in using 1:i with linespoints lw 2 dt dtype(i) pt (i + 3) ps 1.3 lc rgb C[(i - 2) % NC + 1] title olabel(columnhead(i))
