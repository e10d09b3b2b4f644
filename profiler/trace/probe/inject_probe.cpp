// Loads libshardcost_inject.so the way the driver does (dlopen, then InitializeInjection) and
// goes on as an ordinary program: proves the library loads, exports its entry point and
// leaves a program's output and exit code alone, even with no driver present.
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: inject_probe LIBRARY\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "inject_probe: dlopen failed: %s\n", dlerror());
    return 3;
  }
  using Init = int (*)();
  auto init = reinterpret_cast<Init>(dlsym(lib, "InitializeInjection"));
  if (!init) {
    std::fprintf(stderr, "inject_probe: InitializeInjection is not exported\n");
    return 4;
  }
  const int result = init();
  std::printf("program output unchanged (InitializeInjection returned %d)\n", result);
  return 5;
}
