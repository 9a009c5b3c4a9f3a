// The SentencePiece wrapper (tf_spm.h). No exception leaves it: each call
// returns a status with a message, as every C function of the library does.
#include "tf_spm.h"

#include <sentencepiece_processor.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

extern "C" {
#include "error.h"
}

struct tf_spm {
    sentencepiece::SentencePieceProcessor sp;
    std::string path;
};

extern "C" cg_status tf_spm_load(const char *path, tf_spm **out) {
    *out = nullptr;
    try {
        tf_spm *m = new tf_spm;
        m->path = path;
        const auto st = m->sp.Load(path);
        if (!st.ok()) {
            cg_status s = cg_error(CG_ERR_FORMAT, "%s: not a SentencePiece model: %s", path, st.ToString().c_str());
            delete m;
            return s;
        }
        *out = m;
        return CG_OK;
    } catch (const std::bad_alloc &) {
        return cg_error(CG_ERR_NO_MEMORY, "%s: out of memory loading the SentencePiece model", path);
    } catch (const std::exception &e) {
        return cg_error(CG_ERR_FORMAT, "%s: SentencePiece: %s", path, e.what());
    }
}

extern "C" void tf_spm_free(tf_spm *m) { delete m; }

extern "C" cg_status tf_spm_encode(const tf_spm *m, const char *text, char ***pieces, int *n) {
    *pieces = nullptr;
    *n = 0;
    try {
        std::vector<std::string> ps;
        const auto st = m->sp.Encode(text, &ps);
        if (!st.ok())
            return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: cannot encode the text: %s", m->path.c_str(),
                            st.ToString().c_str());
        size_t bytes = sizeof(char *) * (ps.size() + 1);
        for (const auto &p : ps) bytes += p.size() + 1;
        char **block = static_cast<char **>(std::malloc(bytes));
        if (!block) return cg_error(CG_ERR_NO_MEMORY, "out of memory encoding a text of %zu bytes", strlen(text));
        char *at = reinterpret_cast<char *>(block + ps.size() + 1);
        for (size_t i = 0; i < ps.size(); i++) {
            block[i] = at;
            std::memcpy(at, ps[i].c_str(), ps[i].size() + 1);
            at += ps[i].size() + 1;
        }
        block[ps.size()] = nullptr;
        *pieces = block;
        *n = static_cast<int>(ps.size());
        return CG_OK;
    } catch (const std::bad_alloc &) {
        return cg_error(CG_ERR_NO_MEMORY, "out of memory encoding a text of %zu bytes", strlen(text));
    }
}

extern "C" cg_status tf_spm_decode(const tf_spm *m, const char *const *pieces, int n, char **text) {
    *text = nullptr;
    try {
        std::vector<std::string> ps(pieces, pieces + n);
        std::string out;
        const auto st = m->sp.Decode(ps, &out);
        if (!st.ok())
            return cg_error(CG_ERR_INVALID_ARGUMENT, "%s: cannot decode %d pieces: %s", m->path.c_str(), n,
                            st.ToString().c_str());
        *text = static_cast<char *>(std::malloc(out.size() + 1));
        if (!*text) return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding %d pieces", n);
        std::memcpy(*text, out.c_str(), out.size() + 1);
        return CG_OK;
    } catch (const std::bad_alloc &) {
        return cg_error(CG_ERR_NO_MEMORY, "out of memory decoding %d pieces", n);
    }
}
