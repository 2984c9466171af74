# Regime map and frozen predictor (METHODS §5.6) — filled in when `regime` exists.
REGIME_TABLES :=
