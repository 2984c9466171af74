# regime.gp: in (model role dispersion verdict observed outcome), conf (thresholds file or ''), out;
# optional omit (tests/ref/check_figures.py): 'tlo', 'thi', 'xtics' or a row number (0-based)
# whose label is left out, everything else in place, so that a check can find each label's pixels.
load "pipelines/paper/common.gp"
if (!exists("omit")) omit = ""
m = nrows(in)
# Labels of three short lines centred on each bar: the figure widens with the number of models so
# that the widest line ("→ confirmation") fits the space of one bar with room to spare.
set terminal pngcairo size (115 * m + 150 > 1000 ? 115 * m + 150 : 1000),600 font "DejaVu Sans,11"
set output out
# a threshold from CONF ('inf' = none); awk prints it with a decimal point, which gnuplot's
# string-to-number conversion needs ("1e-05" would not convert)
tau(k) = (conf eq "" ? NaN : system("awk -v k=" . k . " '$1 == k && $2 == \"=\" { print ($3 == \"inf\" ? \"1.0e300\" : sprintf(\"%.17e\", $3)) }' '" . conf . "'") + 0)
tlo = tau("tau_lo"); thi = tau("tau_hi")
tfmt(x) = x >= 1e300 ? "∞" : sprintf("%.3g", x)
set title "Regime map: sink dispersion per model" . (conf eq "" ? "\n{/*0.85 (no thresholds fitted: no verdicts)}" : sprintf("\n{/*0.85 τ_{lo} = %s, τ_{hi} = %s; bar colour: verdict (red unsafe, blue safe, grey abstain); label: verdict / observed → outcome}", tfmt(tlo), tfmt(thi)))
set ylabel "sink dispersion (SD across heads of head mean sink mass)"
set xrange [-0.6:m - 0.4]
stats in using "dispersion" nooutput
set yrange [0:(STATS_max > 0 ? 1.35 * STATS_max : 1)]
set xtics rotate by -30 left
if (omit eq "xtics") { set xtics textcolor rgb "white" }
set style fill solid 0.8 border rgb "#333333"
set boxwidth 0.6
unset key
# the τ lines are named in the right margin, beside the plot, where no bar or model name is
set rmargin 8
if (conf ne "" && thi < 1e300) { set arrow from graph 0, first thi to graph 1, first thi nohead dt 2 lw 2 lc rgb "#d7191c" }
if (conf ne "" && thi < 1e300 && omit ne "thi") { set label "τ_{hi}" at graph 1, first thi offset 0.8,0 left tc rgb "#d7191c" }
if (conf ne "") { set arrow from graph 0, first tlo to graph 1, first tlo nohead dt 2 lw 2 lc rgb "#2c7bb6" }
if (conf ne "" && omit ne "tlo") { set label "τ_{lo}" at graph 1, first tlo offset 0.8,0 left tc rgb "#2c7bb6" }
lab(i, v, o, oc) = (v eq "-" || omit eq sprintf("%d", i) ? "" : v . "\n/ " . o . "\n→ " . oc)
# bar colour: the predictor's verdict (unsafe red, safe blue, abstain grey, none purple)
vcol(v) = v eq "unsafe" ? 0xd7191c : v eq "safe" ? 0x2c7bb6 : v eq "abstain" ? 0x999999 : 0x7570b3
xname(m, r) = r eq "dev" ? m . " (dev)" : m
set style textbox opaque noborder margins 0.5,0.5
plot in using 0:"dispersion":(vcol(strcol("verdict"))):xtic(xname(strcol("model"), strcol("role"))) \
        with boxes lc rgb variable, \
     in using 0:"dispersion":(lab(int($0), strcol("verdict"), strcol("observed"), strcol("outcome"))) \
        with labels offset 0,2.4 font ",10" boxed
