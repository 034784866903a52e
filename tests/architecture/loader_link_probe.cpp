// Links the whole loader archive (see CMakeLists.txt) so the architecture test can inspect
// every symbol and shared library the loader brings into a service.
int main() {
  return 0;
}
