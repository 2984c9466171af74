# frames-keys.gp: in (layer key r z: frames --keys), name, out. Two heatmaps, layer × key position:
# the received mass r and the lift z = r/u over chance (METHODS §7.1), each averaged over heads.
load "pipelines/paper/common.gp"
set terminal pngcairo size 1000,640 font "DejaVu Sans,11"
set output out
set multiplot layout 2,1 title name . ": where each layer's attention lands (METHODS §7.1; mean over heads and sequences)"
set xlabel "key position k"
set ylabel "layer"
set ytics 1
set autoscale xfix
set autoscale yfix
set grid noytics
set palette defined (0 "#ffffff", 1 "#7570b3", 2 "#1b1b5e")
set title "received mass r(k)"
plot in using "key":"layer":"r" with image
set title "lift z(k) = r(k)/u(k) (log scale; 1 = chance)"
set logscale cb
set cbrange [0.1:*]
plot in using "key":"layer":"z" with image
unset multiplot
