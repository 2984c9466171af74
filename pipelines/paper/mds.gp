# mds.gp: in (cluster --heads-tsv table), name, out.  Classical MDS of heads under three
# conventions, coloured by the head's mean sink mass.
load "pipelines/paper/common.gp"
set terminal pngcairo size 1500,540 font "DejaVu Sans,11"
set output out
set palette defined (0 "#2c7bb6", 0.5 "#ffffbf", 1 "#d7191c")
stats in using "sink_mass" nooutput
set cbrange [STATS_min:(STATS_max > STATS_min ? STATS_max : STATS_min + 1e-6)]
set cblabel "head mean sink mass"
set grid xtics ytics lc rgb "#dddddd"
set border 15
set multiplot layout 1,3 title name . ": classical MDS of heads, coloured by sink mass" font ",14"
set xlabel "MDS 1"
set ylabel "MDS 2"
set title "JS, sink kept"
plot in using "mds1_js_keep":"mds2_js_keep":"sink_mass" with points pt 7 ps 1.6 lc palette
set title "JS, sink dropped"
plot in using "mds1_js_drop":"mds2_js_drop":"sink_mass" with points pt 7 ps 1.6 lc palette
set title "d_A⊥ (content distance)"
plot in using "mds1_content_full":"mds2_content_full":"sink_mass" with points pt 7 ps 1.6 lc palette
unset multiplot
