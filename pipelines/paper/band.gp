# band.gp: in (theory band table), out.  Min–max band of each dissimilarity against sink mass s.
load "pipelines/paper/common.gp"
set terminal pngcairo size 1000,600 font "DejaVu Sans,11"
set output out
set title "Band collapse: range over random pairs of rows sharing sink mass s\n{/*0.85 classical dissimilarities (sink kept) shrink towards 0; d_A⊥ does not see s}"
set xlabel "sink mass s of both rows"
set ylabel "dissimilarity (min–max band, log scale)"
set logscale y
set format y "10^{%T}"
set xrange [0:1]
set key bottom left box opaque
set style fill transparent solid 0.30 noborder
plot in using "s":"min_cos_keep":"max_cos_keep" with filledcurves lc rgb C[1] title "cosine distance", \
     in using "s":"min_js_keep":"max_js_keep" with filledcurves lc rgb C[2] title "Jensen–Shannon (bits)", \
     in using "s":"min_euc_keep":"max_euc_keep" with filledcurves lc rgb C[3] title "Euclidean", \
     in using "s":"min_content":"max_content" with filledcurves lc rgb C[5] title "d_A⊥ (content)", \
     in using "s":(1 - column("bound")) with lines dt 2 lw 2 lc rgb "#000000" title "1 − s²/(s²+(1−s)²): largest cosine distance allowed"
