#include "ir/fingerprint.h"

#include <openssl/evp.h>

#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace mltune::ir {
namespace {

// A module as canonical lines, one per instruction, in which operands, control predecessors and
// called computations are referred to by canonical position instead of by name. Two modules with
// the same lines have the same structure. `names` maps each line back to where it came from.
// A constant whose bytes belong at `offset` of a canonical line, hex-encoded, but were left out
// of it: Fingerprint hashes them from the literal, so a model's weights are never copied as text.
struct DeferredLiteral {
  size_t offset;
  const Literal* literal;
};

struct CanonicalForm {
  std::vector<std::string> lines;
  std::vector<std::string> names;
  std::vector<std::vector<DeferredLiteral>> deferred;  // per line, with defer_literals
};

// How AttributesKey writes a constant's value.
enum class LiteralKey { kBytes, kDigest, kDeferred };

void AppendInts(std::string& out, std::string_view tag, const std::vector<int64_t>& v) {
  out += tag;
  out += "=[";
  out += absl::StrJoin(v, ",");
  out += "] ";
}

std::string WindowKey(const Window& w) {
  std::string out;
  for (const WindowDim& d : w.dims) {
    absl::StrAppend(&out, d.size, "/", d.stride, "/", d.padding_low, "_", d.padding_high, "/",
                    d.window_dilation, "/", d.base_dilation, "/", d.window_reversal ? 1 : 0, ";");
  }
  return out;
}

void AppendLiteralBytes(std::string& out, const Literal& l) {
  for (const Literal& e : l.elements()) AppendLiteralBytes(out, e);
  // By table, not snprintf: a model's weights are hundreds of MB, and a call per byte took
  // minutes to fingerprint them.
  static constexpr char kHex[] = "0123456789abcdef";
  const uint8_t* data = l.untyped_data();
  const size_t start = out.size();
  out.resize(start + 2 * static_cast<size_t>(l.size_bytes()));
  char* hex = out.data() + start;
  for (int64_t b = 0; b < l.size_bytes(); ++b) {
    *hex++ = kHex[data[b] >> 4];
    *hex++ = kHex[data[b] & 15];
  }
  out += ";";
}

// The length of what AppendLiteralBytes appends.
size_t LiteralBytesLength(const Literal& l) {
  size_t n = 2 * static_cast<size_t>(l.size_bytes()) + 1;
  for (const Literal& e : l.elements()) n += LiteralBytesLength(e);
  return n;
}

// Every structured attribute, whether or not it is meaningful for the opcode: unused fields keep
// their defaults, so including them costs nothing and cannot miss a field. A constant's value is
// keyed by its bytes, or by its SHA-256 so keys of big constants stay short (kDigest), or left
// for the caller to add where `deferred` says (kDeferred).
std::string AttributesKey(const Instruction& i, LiteralKey literal_key = LiteralKey::kBytes,
                          std::vector<DeferredLiteral>* deferred = nullptr) {
  std::string out;
  AppendInts(out, "dims", i.dimensions);
  if (i.comparison_direction) {
    absl::StrAppend(&out, "dir=", std::string(ComparisonDirectionName(*i.comparison_direction)),
                    " ");
  }
  absl::StrAppend(&out, "cmp_type=", static_cast<int>(i.comparison_type), " ");
  for (const SliceDim& s : i.slice)
    absl::StrAppend(&out, "slice=", s.start, ":", s.limit, ":", s.stride, " ");
  AppendInts(out, "ds_sizes", i.dynamic_slice_sizes);
  if (i.window) absl::StrAppend(&out, "window=", WindowKey(*i.window), " ");
  if (i.conv_dnums) {
    absl::StrAppend(&out, "conv=", ConvolutionDimensionNumbersToString(*i.conv_dnums), " ");
  }
  absl::StrAppend(&out, "fgc=", i.feature_group_count, " bgc=", i.batch_group_count, " ");
  if (i.dot_dnums) {
    AppendInts(out, "lb", i.dot_dnums->lhs_batch_dimensions);
    AppendInts(out, "lc", i.dot_dnums->lhs_contracting_dimensions);
    AppendInts(out, "rb", i.dot_dnums->rhs_batch_dimensions);
    AppendInts(out, "rc", i.dot_dnums->rhs_contracting_dimensions);
  }
  if (i.gather_dnums) {
    const GatherDimensionNumbers& g = *i.gather_dnums;
    AppendInts(out, "g_offset", g.offset_dims);
    AppendInts(out, "g_collapsed", g.collapsed_slice_dims);
    AppendInts(out, "g_map", g.start_index_map);
    AppendInts(out, "g_obatch", g.operand_batching_dims);
    AppendInts(out, "g_ibatch", g.start_indices_batching_dims);
    absl::StrAppend(&out, "g_ivd=", g.index_vector_dim, " ");
  }
  AppendInts(out, "g_sizes", i.gather_slice_sizes);
  if (i.scatter_dnums) {
    const ScatterDimensionNumbers& s = *i.scatter_dnums;
    AppendInts(out, "s_window", s.update_window_dims);
    AppendInts(out, "s_inserted", s.inserted_window_dims);
    AppendInts(out, "s_map", s.scatter_dims_to_operand_dims);
    AppendInts(out, "s_ibatch", s.input_batching_dims);
    AppendInts(out, "s_sbatch", s.scatter_indices_batching_dims);
    absl::StrAppend(&out, "s_ivd=", s.index_vector_dim, " ");
  }
  absl::StrAppend(&out, "sorted=", i.indices_are_sorted, " unique=", i.unique_indices,
                  " iota=", i.iota_dimension, " index=", i.tuple_index,
                  " param=", i.parameter_number, " ");
  for (const PaddingDim& p : i.padding) {
    absl::StrAppend(&out, "pad=", p.low, "_", p.high, "_", p.interior, " ");
  }
  if (i.literal_elided) out += "literal=elided ";
  if (i.literal) {
    // Raw bytes, so -0.0 vs 0.0 and NaN payloads count as different constants.
    absl::StrAppend(&out, "literal=", i.literal->shape().ToString(false), ":");
    if (literal_key == LiteralKey::kDigest) {
      out += LiteralDigest(*i.literal);
    } else if (literal_key == LiteralKey::kDeferred) {
      deferred->push_back({out.size(), &*i.literal});
    } else {
      AppendLiteralBytes(out, *i.literal);
    }
    out += " ";
  }
  absl::StrAppend(&out, "target=\"", i.custom_call_target,
                  "\" effect=", i.custom_call_has_side_effect, " stable=", i.is_stable,
                  " kind=", i.fusion_kind, " dist=", static_cast<int>(i.distribution),
                  " fft=", static_cast<int>(i.fft_type), " ");
  AppendInts(out, "fft_len", i.fft_length);
  absl::StrAppend(&out, "rp=", i.exponent_bits, "/", i.mantissa_bits, " eps=", i.epsilon,
                  " fidx=", i.feature_index, " ");
  if (i.triangular_solve) {
    const TriangularSolveOptions& t = *i.triangular_solve;
    absl::StrAppend(&out, "trsm=", t.left_side, t.lower, t.unit_diagonal,
                    static_cast<int>(t.transpose_a), " ");
  }
  absl::StrAppend(&out, "chol_lower=", i.cholesky_lower, " topk=", i.topk_k, "/", i.topk_largest,
                  " ");
  for (const RawAttribute& a : i.extra_attributes) absl::StrAppend(&out, a.name, "=", a.value, " ");
  // Sharding and backend config steer code generation, so they count; metadata does not.
  absl::StrAppend(&out, "sharding=", i.sharding, " frontend=", i.frontend_attributes,
                  " backend=", i.backend_config);
  return out;
}

// Canonical order: a DFS from the root in operand order, then whatever the root does not reach
// (side-effecting or dead instructions) in the same DFS from each, in instruction order.
std::vector<Instruction*> CanonicalOrder(const Computation& c) {
  std::vector<Instruction*> order;
  std::unordered_set<const Instruction*> visited;
  std::vector<std::pair<Instruction*, size_t>> stack;
  auto visit = [&](Instruction* start) {
    if (start == nullptr || !visited.insert(start).second) return;
    stack.push_back({start, 0});
    while (!stack.empty()) {
      auto& [instr, next] = stack.back();
      const size_t n_ops = instr->operands().size();
      const size_t n_total = n_ops + instr->control_predecessors().size();
      if (next < n_total) {
        Instruction* dep =
            next < n_ops ? instr->operands()[next] : instr->control_predecessors()[next - n_ops];
        ++next;
        if (visited.insert(dep).second) stack.push_back({dep, 0});
      } else {
        order.push_back(instr);
        stack.pop_back();
      }
    }
  };
  visit(c.root());
  for (Instruction* i : c.instructions()) visit(i);
  return order;
}

// With `defer_literals`, constants' bytes are left out of the lines (CanonicalForm::deferred).
CanonicalForm Canonicalize(const Module& m, bool defer_literals = false) {
  CanonicalForm form;
  std::vector<Computation*> comps = m.MakeComputationPostOrder();
  std::unordered_set<const Computation*> reachable(comps.begin(), comps.end());
  for (Computation* c : m.computations()) {
    if (!reachable.count(c)) comps.push_back(c);
  }
  std::unordered_map<const Computation*, size_t> comp_index;
  for (size_t ci = 0; ci < comps.size(); ++ci) comp_index[comps[ci]] = ci;

  form.lines.push_back(
      absl::StrCat("module entry=", m.entry() ? static_cast<int64_t>(comp_index[m.entry()]) : -1,
                   " computations=", comps.size()));
  form.names.push_back("module " + m.name());
  std::string aliases = "aliases";
  for (const IoAlias& a : m.input_output_alias) {
    absl::StrAppend(&aliases, " {", absl::StrJoin(a.output_index, ","), "}:(", a.parameter_number,
                    ",{", absl::StrJoin(a.parameter_index, ","), "},", a.kind, ")");
  }
  form.lines.push_back(aliases);
  form.names.push_back("module " + m.name() + " input_output_alias");

  for (size_t ci = 0; ci < comps.size(); ++ci) {
    const Computation& c = *comps[ci];
    std::vector<Instruction*> order = CanonicalOrder(c);
    std::unordered_map<const Instruction*, size_t> index;
    for (size_t k = 0; k < order.size(); ++k) index[order[k]] = k;
    form.lines.push_back(absl::StrCat("computation ", ci, " instructions=", order.size(), " root=",
                                      c.root() ? static_cast<int64_t>(index[c.root()]) : -1));
    form.names.push_back("computation " + c.name());
    for (const Instruction* i : order) {
      std::string line =
          absl::StrCat(std::string(OpcodeName(i->opcode())), " ", i->shape().ToString(true), " (");
      for (const Instruction* op : i->operands()) {
        auto it = index.find(op);
        absl::StrAppend(&line, it == index.end() ? -1 : static_cast<int64_t>(it->second), ",");
      }
      line += ") calls(";
      for (const Computation* callee : i->called_computations()) {
        auto it = comp_index.find(callee);
        absl::StrAppend(&line, it == comp_index.end() ? -1 : static_cast<int64_t>(it->second), ",");
      }
      line += ") ctrl(";
      for (const Instruction* p : i->control_predecessors()) {
        absl::StrAppend(&line, index.count(p) ? static_cast<int64_t>(index[p]) : -1, ",");
      }
      std::vector<DeferredLiteral> deferred;
      const std::string attributes =
          AttributesKey(*i, defer_literals ? LiteralKey::kDeferred : LiteralKey::kBytes, &deferred);
      line += ") ";
      for (DeferredLiteral& d : deferred) d.offset += line.size();
      line += attributes;
      form.deferred.resize(form.lines.size());
      form.deferred.push_back(std::move(deferred));
      form.lines.push_back(std::move(line));
      form.names.push_back(absl::StrCat("computation ", c.name(), ", instruction ", i->name()));
    }
  }
  return form;
}

// Incremental SHA-256 over length-prefixed chunks, so no two different chunk lists hash alike.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }
  ~Sha256() { EVP_MD_CTX_free(ctx_); }
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Chunk(const void* data, size_t size) {
    Length(size);
    Update(data, size);
  }
  void Chunk(const std::string& s) { Chunk(s.data(), s.size()); }
  // A chunk fed in parts: its length, then Updates adding up to it.
  void Length(uint64_t n) { EVP_DigestUpdate(ctx_, &n, sizeof(n)); }
  void Update(const void* data, size_t size) { EVP_DigestUpdate(ctx_, data, size); }

  std::string HexDigest() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_DigestFinal_ex(ctx_, digest, &len);
    std::string hex;
    for (unsigned int k = 0; k < len; ++k) {
      char buf[3];
      std::snprintf(buf, sizeof(buf), "%02x", digest[k]);
      hex += buf;
    }
    return hex;
  }

 private:
  EVP_MD_CTX* ctx_;
};

// Feeds what AppendLiteralBytes would append, a block at a time.
void HashLiteralBytes(Sha256& sha, const Literal& l) {
  for (const Literal& e : l.elements()) HashLiteralBytes(sha, e);
  static constexpr char kHex[] = "0123456789abcdef";
  char block[1 << 16];
  const uint8_t* data = l.untyped_data();
  int64_t b = 0;
  while (b < l.size_bytes()) {
    size_t n = 0;
    for (; b < l.size_bytes() && n < sizeof(block); ++b) {
      block[n++] = kHex[data[b] >> 4];
      block[n++] = kHex[data[b] & 15];
    }
    sha.Update(block, n);
  }
  sha.Update(";", 1);
}

// Sha256::Chunk of the line with its deferred literals' bytes in place.
void HashLine(Sha256& sha, const std::string& line, const std::vector<DeferredLiteral>& deferred) {
  size_t length = line.size();
  for (const DeferredLiteral& d : deferred) length += LiteralBytesLength(*d.literal);
  sha.Length(length);
  size_t at = 0;
  for (const DeferredLiteral& d : deferred) {
    sha.Update(line.data() + at, d.offset - at);
    HashLiteralBytes(sha, *d.literal);
    at = d.offset;
  }
  sha.Update(line.data() + at, line.size() - at);
}

void HashLiteral(Sha256& sha, const Literal& l) {
  sha.Chunk(l.shape().ToString(false));
  for (const Literal& e : l.elements()) HashLiteral(sha, e);
  sha.Chunk(l.untyped_data(), static_cast<size_t>(l.size_bytes()));
}

}  // namespace

std::string Fingerprint(const Module& module) {
  Sha256 sha;
  // As if each line held its constants' bytes as hex (what StructurallyEqual compares), without
  // the copy: a model's weights would take twice their size again as text.
  const CanonicalForm form = Canonicalize(module, /*defer_literals=*/true);
  for (size_t k = 0; k < form.lines.size(); ++k) {
    HashLine(sha, form.lines[k],
             k < form.deferred.size() ? form.deferred[k] : std::vector<DeferredLiteral>{});
  }
  return sha.HexDigest();
}

std::string LiteralDigest(const Literal& literal) {
  Sha256 sha;
  HashLiteral(sha, literal);
  return sha.HexDigest();
}

std::string InstructionAttributesKey(const Instruction& instr) {
  return AttributesKey(instr, LiteralKey::kDigest);
}

bool StructurallyEqual(const Module& a, const Module& b, std::string* why) {
  CanonicalForm fa = Canonicalize(a);
  CanonicalForm fb = Canonicalize(b);
  const size_t n = std::min(fa.lines.size(), fb.lines.size());
  for (size_t k = 0; k < n; ++k) {
    if (fa.lines[k] != fb.lines[k]) {
      if (why != nullptr) {
        *why = absl::StrCat(fa.names[k], " differs from ", fb.names[k], ":\n  ", fa.lines[k],
                            "\n  ", fb.lines[k]);
      }
      return false;
    }
  }
  if (fa.lines.size() != fb.lines.size()) {
    if (why != nullptr) *why = "modules have different numbers of instructions or computations";
    return false;
  }
  return true;
}

}  // namespace mltune::ir
