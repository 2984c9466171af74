# reversal.gp: in (rows metric, one column per model: flip rate %), out.  Grouped bars.
load "pipelines/paper/common.gp"
n = ncols(in)
set terminal pngcairo size 1000,560 font "DejaVu Sans,11"
set output out
set title "Flip rate of the closer-head verdict, keep-sink vs drop-sink\n{/*0.85 (paper: 17–47% for classical metrics on ten models; d_A⊥ 0% by construction)}"
set ylabel "triples whose verdict flips (%)"
set xlabel "metric (keep vs drop convention)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border rgb "#333333"
set boxwidth 0.9
set yrange [0:*]
set key top right title "model" noenhanced
plot for [i=2:n] in using i:xtic(mlabel(strcol(1))) title columnhead(i) lc rgb C[(i - 2) % NC + 1]
