// tokconf's tokenizer-only libllama: the llama.h functions a vocab_only load needs that llama-vocab.cpp
// does not define itself (llama_tokenize, llama_token_to_piece, llama_detokenize and llama_vocab_* are
// llama-vocab.cpp's own, compiled unchanged beside this file).
//
// It replaces src/llama.cpp's llama_model_load and src/llama-model.cpp's llama_model, which pull in
// every model architecture: for a vocab_only load they do, in this order (b9093 to b11434 alike),
//   llama_model_loader ml(...)          the GGUF file, parsed by ggml's gguf.cpp
//   llama_model_create(ml, params)      refuses LLM_ARCH_UNKNOWN: "unknown model architecture: '<name>'"
//   model->load_hparams(ml)             with vocab_only: every non-array GGUF key as a string
//                                       (gguf_kv_to_str) into model->gguf_kv, and general.name; then returns
//   CLIP refused                        "CLIP cannot be used as main model, use it with --mmproj instead"
//   model->load_vocab(ml)               llama_vocab::load(ml, LLM_KV(arch)), its errors prefixed
//                                       "error loading model vocabulary: "
// and log a failure as "llama_model_load: error loading model: <what>", which is what tokconf reads a
// refusal's reason from. This file does the same with the tree's own loader, LLM_KV and llama_vocab.
// Not reproduced: llama_model_create's "unsupported model architecture" for an architecture llama-arch
// knows but no model class implements (its list lives in llama-model.cpp).
//
// The loader's constructor gained and lost parameters over the builds (use_mmap/use_direct_io became
// load_mode, load_mtp was added, ...). `loader_args` converts to whatever each parameter is: the path to
// `const std::string &`, an empty list to `std::vector<std::string> &`, and a value-initialized scalar
// (false, nullptr, enum 0) to every flag, pointer and mode; the constructor is called with as many of
// them as it takes. A tree whose loader takes something else fails to compile here, and tokconf falls
// back to the full libllama build (harness/builds/build.py).

#include "llama.h"
#include "llama-arch.h"
#include "llama-impl.h"
#include "llama-model-loader.h"
#include "llama-vocab.h"

#include "ggml.h"

#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <unordered_map>
#include <vector>

// llama.h declares `struct llama_model` opaque; in the full build it is llama-model.h's class. Here it
// holds what the functions below read: the vocabulary and the GGUF metadata as strings.
struct llama_model {
    llama_vocab vocab;
    std::unordered_map<std::string, std::string> gguf_kv;  // as llama_model's
};

namespace {

struct loader_args {
    const std::string & fname;
    std::vector<std::string> & splits;

    operator const std::string &() const { return fname; }
    operator std::vector<std::string> &() const { return splits; }
    template <typename T, typename = std::enable_if_t<std::is_scalar_v<T>>>
    operator T() const { return T{}; }
};

template <std::size_t>
using loader_arg = loader_args;

template <typename Indices, typename = void>
struct loader_takes : std::false_type {};

template <std::size_t... I>
struct loader_takes<std::index_sequence<I...>, std::enable_if_t<std::is_constructible_v<llama_model_loader, loader_arg<I>...>>>
    : std::true_type {};

template <std::size_t... I>
std::unique_ptr<llama_model_loader> make_loader(const loader_args & args, std::index_sequence<I...>) {
    return std::make_unique<llama_model_loader>(((void) I, args)...);
}

template <std::size_t N = 0>
std::unique_ptr<llama_model_loader> open_loader(const loader_args & args) {
    if constexpr (loader_takes<std::make_index_sequence<N>>::value) {
        return make_loader(args, std::make_index_sequence<N>{});
    } else {
        static_assert(N < 24, "tokconf: no llama_model_loader constructor takes (path, splits, flags...)");
        return open_loader<N + 1>(args);
    }
}

template <typename T, typename = void>
struct has_metadata : std::false_type {};
template <typename T>
struct has_metadata<T, std::void_t<decltype(std::declval<T &>().metadata)>> : std::true_type {};

// A template, so that the branch the loader's members do not fit is discarded.
template <typename Loader>
const gguf_context * metadata_of(const Loader & ml) {
    if constexpr (has_metadata<Loader>::value) {
        return ml.metadata;
    } else {
        return ml.meta.get();  // before the loader could read metadata given by the caller
    }
}

llama_model * load_vocab_only(const std::string & fname) {
    std::vector<std::string> splits;
    auto ml = open_loader(loader_args{fname, splits});
    const llm_arch arch = ml->get_arch();
    if (arch == LLM_ARCH_UNKNOWN) {
        throw std::runtime_error("unknown model architecture: '" + ml->get_arch_name() + "'");
    }
    auto model = std::make_unique<llama_model>();
    const gguf_context * ctx = metadata_of(*ml);
    for (int64_t i = 0; i < gguf_get_n_kv(ctx); i++) {
        if (gguf_get_kv_type(ctx, i) == GGUF_TYPE_ARRAY) {
            continue;
        }
        model->gguf_kv.emplace(gguf_get_key(ctx, i), gguf_kv_to_str(ctx, i));
    }
    std::string name;
    try {
        ml->get_key(LLM_KV_GENERAL_NAME, name, false);
    } catch (const std::exception & e) {
        throw std::runtime_error("error loading model hyperparameters: " + std::string(e.what()));
    }
    if (arch == LLM_ARCH_CLIP) {
        throw std::runtime_error("CLIP cannot be used as main model, use it with --mmproj instead");
    }
    try {
        model->vocab.load(*ml, LLM_KV(arch));
    } catch (const std::exception & e) {
        throw std::runtime_error("error loading model vocabulary: " + std::string(e.what()));
    }
    return model.release();
}

}  // namespace

// src/llama.cpp's llama_backend_init without ggml_backend_load_all: no ggml backend is built here.
void llama_backend_init(void) {
    ggml_time_init();
    struct ggml_init_params params = {0, NULL, false};  // initializes ggml's f16 tables
    ggml_free(ggml_init(params));
}

// Value-initialized: the only field read here is vocab_only, which the caller sets.
struct llama_model_params llama_model_default_params(void) {
    struct llama_model_params result = {};
    return result;
}

struct llama_model * llama_model_load_from_file(const char * path_model, struct llama_model_params params) {
    ggml_time_init();
    if (!params.vocab_only) {
        LLAMA_LOG_ERROR("%s: this is tokconf's tokenizer-only libllama: it loads vocabularies only (vocab_only = true)\n", __func__);
        return nullptr;
    }
    try {
        return load_vocab_only(path_model);
    } catch (const std::exception & err) {
        LLAMA_LOG_ERROR("%s: error loading model: %s\n", "llama_model_load", err.what());
        LLAMA_LOG_ERROR("%s: failed to load model\n", "llama_model_load_from_file_impl");
        return nullptr;
    }
}

void llama_model_free(struct llama_model * model) {
    delete model;
}

const struct llama_vocab * llama_model_get_vocab(const struct llama_model * model) {
    return &model->vocab;
}

// src/llama-model.cpp's, unchanged.
int32_t llama_model_meta_val_str(const struct llama_model * model, const char * key, char * buf, size_t buf_size) {
    const auto & it = model->gguf_kv.find(key);
    if (it == model->gguf_kv.end()) {
        if (buf_size > 0) {
            buf[0] = '\0';
        }
        return -1;
    }
    return snprintf(buf, buf_size, "%s", it->second.c_str());
}

#ifdef TOKCONF_LLAMA_VERSION  // where llama.h declares llama_version: LLAMA_VERSION, as CMake makes it
const char * llama_version(void) {
    return TOKCONF_LLAMA_VERSION;
}
#endif

// Said in the provenance of what this library answers (tokconf.oracles.libllama's `system_info`).
const char * llama_print_system_info(void) {
    return "tokconf tokenizer-only libllama: no ggml backend";
}
