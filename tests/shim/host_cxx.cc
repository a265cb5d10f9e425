/*
 * host_cxx.cc - C++ allocation under the shim: new/delete (plain, array,
 * sized, aligned, nothrow), containers that grow through the pooled sizes,
 * std::thread with cross-thread deletes, thread_local objects whose
 * destructors allocate, and std::bad_alloc from an impossible request.
 *
 * libstdc++'s operator new calls malloc, so with the shim C++ allocations
 * of pooled sizes come from the pools (jemalloc's library exports its own
 * operators too; whichever the program binds, new and delete pair up).
 * Prints "cxx ok" or what broke on stderr and exits 1.
 */
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

static std::atomic<int> failures{0};

#define EXPECT(cond)                                                                               \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			std::fprintf(stderr, "host_cxx: line %d: %s\n", __LINE__, #cond);          \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

struct Tracked {
	std::vector<char> buf;
	explicit Tracked(size_t n) : buf(n, 'x')
	{
	}
	~Tracked()
	{
		/* Allocates while the thread is being torn down. */
		std::vector<int> tmp(70000, 3);
		if (std::accumulate(tmp.begin(), tmp.end(), 0L) != 210000L)
			failures++;
	}
};

static thread_local std::unique_ptr<Tracked> tls_obj;

static void scalar_and_array()
{
	for (size_t n : {size_t(1), size_t(100), size_t(70000), size_t(1) << 20, size_t(9) << 20}) {
		char *a = new char[n];
		std::memset(a, 1, n);
		EXPECT(a[n - 1] == 1);
		delete[] a;
		auto *v = new std::vector<double>(n / 8 + 1, 2.5);
		EXPECT(v->back() == 2.5);
		delete v;
		int *p = static_cast<int *>(::operator new(n * sizeof(int)));
		p[n - 1] = 5;
#if defined(__cpp_sized_deallocation)
		::operator delete(p, n * sizeof(int));
#else
		::operator delete(p);
#endif
	}
#if defined(__cpp_aligned_new)
	for (size_t al : {size_t(64), size_t(4096), size_t(1) << 21}) {
		void *p = ::operator new(size_t(3) << 20, std::align_val_t(al));
		EXPECT(reinterpret_cast<uintptr_t>(p) % al == 0);
		std::memset(p, 0, size_t(3) << 20);
		::operator delete(p, std::align_val_t(al));
	}
#endif
	/* volatile: an impossible size the compiler cannot see coming */
	volatile size_t impossible = size_t(1) << 62;
	void *q = ::operator new(impossible, std::nothrow);
	EXPECT(q == nullptr);
	bool threw = false;
	try {
		char *huge = new char[impossible];
		huge[0] = 0;
		delete[] huge;
	} catch (const std::bad_alloc &) {
		threw = true;
	}
	EXPECT(threw);
}

static void containers()
{
	std::vector<uint32_t> v;
	for (uint32_t i = 0; i < 3000000; i++)
		v.push_back(i * 7u);
	uint64_t sum = 0;
	for (uint32_t x : v)
		sum += x;
	EXPECT(sum == 7ull * (2999999ull * 3000000ull / 2));
	v.resize(100);
	v.shrink_to_fit();
	EXPECT(v[99] == 693u);
	std::string s;
	for (int i = 0; i < 200000; i++)
		s += "abcde";
	EXPECT(s.size() == 1000000 && s.substr(999995) == "abcde");
}

static void threads()
{
	std::mutex m;
	std::vector<std::vector<char> *> handoff;
	std::vector<std::thread> ts;
	for (int t = 0; t < 16; t++) {
		ts.emplace_back([t, &m, &handoff] {
			tls_obj.reset(new Tracked(100000 + size_t(t)));
			for (int i = 0; i < 50; i++) {
				auto *b = new std::vector<char>(size_t(64 + i) << 10, char(t));
				std::lock_guard<std::mutex> g(m);
				handoff.push_back(b);
			}
			/* delete blocks other threads allocated */
			for (int i = 0; i < 40; i++) {
				std::vector<char> *b = nullptr;
				{
					std::lock_guard<std::mutex> g(m);
					if (!handoff.empty()) {
						b = handoff.back();
						handoff.pop_back();
					}
				}
				if (b) {
					char c = (*b)[0];
					for (char x : *b)
						if (x != c) {
							failures++;
							break;
						}
					delete b;
				}
			}
		});
	}
	for (auto &t : ts)
		t.join();
	for (auto *b : handoff)
		delete b;
}

int main()
{
	scalar_and_array();
	containers();
	threads();
	if (failures)
		return 1;
	std::printf("cxx ok\n");
	return 0;
}
