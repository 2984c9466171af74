# collapse.gp: in (step H Hb content_term sink_mass, layer 'all'), name, out.
load "pipelines/paper/common.gp"
set terminal pngcairo size 900,560 font "DejaVu Sans,11"
set output out
set title name . ": attention entropy over training and its sink/content parts\n{/*0.85 H = H_b(s) + (1−s)H(π), mean over rows and heads}"
set xlabel "training step"
set ylabel "entropy (nats)"
set y2label "mean sink mass s"
set y2tics nomirror
set yrange [0:*]
set y2range [0:*]
set key below horizontal
plot in using "step":"H" with linespoints lw 2 pt 7 lc rgb C[3] title "H (total)", \
     in using "step":"content_term" with linespoints lw 2 pt 5 lc rgb C[1] title "(1−s)H(π) (content)", \
     in using "step":"Hb" with linespoints lw 2 pt 9 lc rgb C[2] title "H_b(s) (sink)", \
     in using "step":"sink_mass" axes x1y2 with lines dt 2 lw 2 lc rgb "#666666" title "sink mass (right axis)"
