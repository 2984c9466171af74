# bypos.gp: in (decompose --by-position: layer bin_lo bin_hi rows sink_mass entropy entropy_sink
# entropy_content), name, out. Sink mass and the entropy split against the query position (bins
# [2^(k-1), 2^k), drawn at their geometric middle), per layer and for all layers together.
load "pipelines/paper/common.gp"
set terminal pngcairo size 1000,420 font "DejaVu Sans,11"
set output out
set datafile separator "\t"
set key autotitle columnhead
set logscale x 2
set xlabel "query position (log-spaced bins)"
set grid
mid(lo, hi) = lo > 0 ? sqrt(lo * (hi - 1 > lo ? hi - 1 : lo)) : 0.5
stats in using 1 nooutput
layers = int(STATS_max) + 1
set multiplot layout 1,2 title name . ": sink mass and entropy by query position (sampled rows)"
set title "sink mass s"
set ylabel "mean s"
set yrange [0:*]
plot for [l=0:layers-1] in using (strcol(1) eq sprintf("%d", l) ? mid($2, $3) : NaN):5 with linespoints title sprintf("layer %d", l), \
     in using (strcol(1) eq "all" ? mid($2, $3) : NaN):5 with linespoints lw 3 lc "black" title "all layers"
set title "all layers: H = H_b(s) + (1-s) H(π)"
set ylabel "nats"
plot in using (strcol(1) eq "all" ? mid($2, $3) : NaN):6 with linespoints lw 2 title "H(p)", \
     in using (strcol(1) eq "all" ? mid($2, $3) : NaN):7 with linespoints lw 2 title "H_b(s)", \
     in using (strcol(1) eq "all" ? mid($2, $3) : NaN):8 with linespoints lw 2 title "H(π)"
unset multiplot
