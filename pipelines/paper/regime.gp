# regime.gp: in (model role dispersion verdict observed outcome), conf (thresholds file or ''), out.
load "pipelines/paper/common.gp"
set terminal pngcairo size 1000,600 font "DejaVu Sans,11"
set output out
# a threshold from CONF ('inf' = none); awk prints it with a decimal point, which gnuplot's
# string-to-number conversion needs ("1e-05" would not convert)
tau(k) = (conf eq "" ? NaN : system("awk -v k=" . k . " '$1 == k && $2 == \"=\" { print ($3 == \"inf\" ? \"1.0e300\" : sprintf(\"%.17e\", $3)) }' '" . conf . "'") + 0)
tlo = tau("tau_lo"); thi = tau("tau_hi")
tfmt(x) = x >= 1e300 ? "∞" : sprintf("%.3g", x)
m = nrows(in)
set title "Regime map: sink dispersion per model" . (conf eq "" ? "\n{/*0.85 (no thresholds fitted: no verdicts)}" : sprintf("\n{/*0.85 τ_{lo} = %s, τ_{hi} = %s; bar colour: verdict (red unsafe, blue safe, grey abstain); label: verdict / observed → outcome}", tfmt(tlo), tfmt(thi)))
set ylabel "sink dispersion (SD across heads of head mean sink mass)"
set xrange [-0.6:m - 0.4]
stats in using "dispersion" nooutput
set yrange [0:(STATS_max > 0 ? 1.3 * STATS_max : 1)]
set xtics rotate by -30 left
set style fill solid 0.8 border rgb "#333333"
set boxwidth 0.6
unset key
if (conf ne "" && thi < 1e300) { set arrow from graph 0, first thi to graph 1, first thi nohead dt 2 lw 2 lc rgb "#d7191c" }
if (conf ne "" && thi < 1e300) { set label "τ_{hi}" at graph 1, first thi offset -3,0.6 tc rgb "#d7191c" }
if (conf ne "") { set arrow from graph 0, first tlo to graph 1, first tlo nohead dt 2 lw 2 lc rgb "#2c7bb6" }
if (conf ne "") { set label "τ_{lo}" at graph 1, first tlo offset -3,-0.8 tc rgb "#2c7bb6" }
lab(v, o, oc) = (v eq "-" ? "" : v . " / " . o . "\n→ " . oc)
# bar colour: the predictor's verdict (unsafe red, safe blue, abstain grey, none purple)
vcol(v) = v eq "unsafe" ? 0xd7191c : v eq "safe" ? 0x2c7bb6 : v eq "abstain" ? 0x999999 : 0x7570b3
xname(m, r) = r eq "dev" ? m . " (dev)" : m
plot in using 0:"dispersion":(vcol(strcol("verdict"))):xtic(xname(strcol("model"), strcol("role"))) \
        with boxes lc rgb variable, \
     in using 0:"dispersion":(lab(strcol("verdict"), strcol("observed"), strcol("outcome"))) \
        with labels offset 0,1.6 font ",10"
