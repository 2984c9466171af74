# band.gp: in (theory band table), out.  Min–max band of each dissimilarity against sink mass s.
# Bands overlap (Jensen–Shannon and Euclidean nearly coincide), so each band's two edges are also
# drawn as lines with their own colour and dash type, the legend showing the edge line: a band
# under another stays visible by its edges.
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
set style fill transparent solid 0.20 noborder
# series k: column key, colour, dash type, title
array key[4] = ["cos_keep", "js_keep", "euc_keep", "content"]
array col[4] = [C[1], C[2], C[3], C[4]]
array dash[4] = [1, 2, 4, 5]
array name[4] = ["cosine distance", "Jensen–Shannon (bits)", "Euclidean", "d_A⊥ (content)"]
lo(k) = "min_" . key[k]
hi(k) = "max_" . key[k]
plot for [k=1:4] in using "s":lo(k):hi(k) with filledcurves lc rgb col[k] notitle, \
     for [k=1:4] in using "s":lo(k) with lines lw 2 dt dash[k] lc rgb col[k] title name[k], \
     for [k=1:4] in using "s":hi(k) with lines lw 2 dt dash[k] lc rgb col[k] notitle, \
     in using "s":(1 - column("bound")) with lines dt 3 lw 2 lc rgb "#000000" title "1 − s²/(s²+(1−s)²): largest cosine distance allowed"
