# Shared settings of the paper's figures: TSV with '#' comment lines and a header line.
set datafile separator "\t"
set datafile columnheaders
set datafile missing "nan"
set encoding utf8
set grid ytics lc rgb "#dddddd" lt 1
set border 3
set tics nomirror
set key noautotitle
# number of columns of the first header line of a TSV file
ncols(f) = int(system("awk -F'\t' '!/^#/ { print NF; exit }' '" . f . "'"))
nrows(f) = int(system("awk '!/^#/ { n++ } END { print n - 1 }' '" . f . "'"))
# Series colours for up to 12 models: Okabe and Ito's 8 colour-blind-safe colours, then 4 of Paul
# Tol's (indigo, wine, olive, brown). Every pair stays apart (CIELAB ΔE ≥ 26, and ≥ 13 under
# simulated protanopia, deuteranopia and tritanopia): tests/ref/check_figures.py checks it.
NC = 12
array C[NC] = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000", \
               "#332288", "#882255", "#999933", "#661100"]
# display names (enhanced text) of the tables' metric and pruning-order keys
olabel(s) = s eq "js_keep" ? "JS keep" : s eq "js_drop" ? "JS drop" : s eq "content_full" ? "d_A⊥" : \
    s eq "aitchison" ? "d_A (Aitchison)" : s eq "random" ? "random (mean of seeds)" : s
mlabel(s) = s eq "cosine" ? "cosine" : s eq "js" ? "Jensen–Shannon" : s eq "euclidean" ? "Euclidean" : \
    s eq "aitchison" ? "d_A vs d_A⊥" : s eq "content" ? "d_A⊥ (full vs drop)" : s
