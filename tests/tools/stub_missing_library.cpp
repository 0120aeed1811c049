// The library the missing-dependency stub plugin needs; deleted from where
// the dynamic linker could find it (it is built where nothing looks).
extern "C" int corenoise_stub_missing_library_function() { return 0; }
