"""`tokconf bisect`: which published llama.cpp build changed an outcome. `search` is the bisection over
the build list, `probe` asks one build the selected cases (a cached mini recording), `report` tells
the result."""
