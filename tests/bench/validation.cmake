# Accuracy harness against oslat (filled in by the validation work)
