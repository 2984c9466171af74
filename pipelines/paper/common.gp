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
array C[8] = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"]
# display names (enhanced text) of the tables' metric and pruning-order keys
olabel(s) = s eq "js_keep" ? "JS keep" : s eq "js_drop" ? "JS drop" : s eq "content_full" ? "d_A⊥" : \
    s eq "aitchison" ? "d_A (Aitchison)" : s eq "random" ? "random (mean of seeds)" : s
mlabel(s) = s eq "cosine" ? "cosine" : s eq "js" ? "Jensen–Shannon" : s eq "euclidean" ? "Euclidean" : \
    s eq "aitchison" ? "d_A vs d_A⊥" : s eq "content" ? "d_A⊥ (full vs drop)" : s
