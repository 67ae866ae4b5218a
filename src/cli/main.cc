#include <cstdio>
int main() { std::puts("brisk"); return 0; }
