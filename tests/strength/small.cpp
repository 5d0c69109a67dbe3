// A small C++ file for tests/test_strength.py: every syntax operator of tokconf.strength.mutants has a site here.
#include <cstdio>

static int count_small(const int * values, int n, int limit) {
    int found = 0;
    for (int i = 0; i < n; ++i) {
        if (values[i] < limit && values[i] != 0) {
            found += 1;
        }
        if (values[i] > 100) {
            break;
        }
    }
    return found;
}

static bool is_even(int v) {
    return v % 2 == 0;
}

static int widths() {
    constexpr int width = 3;  // a constant C++ needs at compile time: its mutants cannot compile
    char buffer[width] = {};
    return sizeof(buffer) + (true ? 1 : 0);
}

int main() {
    const int values[] = {1, 5, 0, 7, 9, 200, 3};
    std::printf("%d %d %d\n", count_small(values, 7, 6), is_even(4) ? 1 : 0, widths());
    return 0;
}
