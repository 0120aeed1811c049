# corenoise inject / selftest tests (filled in by the inject work)
