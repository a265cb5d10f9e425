// host_stats_cxx.cc - a C++ host for the stats tests: its growths come through
// operator new, so the reported call site must be the caller of new,
// demangled (scratchtest::Layer::forward). Prints "ready", waits for EOF on
// stdin, then frees and exits.
#include <cstdio>
#include <cstring>

namespace scratchtest
{
struct Layer {
	__attribute__((noinline, noclone)) char *forward(std::size_t n)
	{
		char *p = new char[n];

		std::memset(p, 1, 64);
		__asm__ volatile("" ::: "memory");
		return p;
	}
};
} // namespace scratchtest

int main()
{
	scratchtest::Layer layer;
	char *a = layer.forward(1 << 20);
	char *b = layer.forward(3 << 20);
	int c;

	std::printf("ready\n");
	std::fflush(stdout);
	while ((c = std::getchar()) != EOF)
		;
	delete[] a;
	delete[] b;
	return 0;
}
