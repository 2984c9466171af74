# frames.gp: in (step checkpoint slot layer head label code: one row per checkpoint and head),
# name, out. Each head's reference-frame label (METHODS §7.1) at each checkpoint.
load "pipelines/paper/common.gp"
set terminal pngcairo size 900,560 font "DejaVu Sans,11"
set output out
set title name . ": reference-frame label of each head over training\n{/*0.85 METHODS §7.1; one row per head (layer·H + head), one column per checkpoint}"
set xlabel "checkpoint (training step)"
set ylabel "head"
set offsets 0.5, 0.5, 0.5, 0.5
set palette maxcolors 4
set palette defined (0 "#dddddd", 1 "#1b9e77", 2 "#d95f02", 3 "#7570b3")
set ytics 1
set rmargin 18
set cbrange [-0.5:3.5]
set cbtics ("none" 0, "centralized" 1, "distributed" 2, "bidirectional" 3)
set grid noytics
plot in using "checkpoint":"slot":"code":xtic(1) with points pt 5 ps 2.2 lc palette
