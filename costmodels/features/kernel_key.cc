// KernelKey: a structural SHA-256 of one kernel, so the measurements of a kernel under many
// configurations, from any module that contains it, group under one key.
#include <openssl/evp.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "costmodels/features/internal.h"
#include "costmodels/features/kernel_graph.h"
#include "ir/fingerprint.h"
#include "ir/opcode.h"

namespace mltune::costmodels::features {
namespace {

// Bumped when the canonical text below changes, so old and new keys never collide.
constexpr char kKeyVersion[] = "kernel-key/1";

std::string Sha256Hex(const std::string& text) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  EVP_DigestUpdate(ctx.get(), text.data(), text.size());
  EVP_DigestFinal_ex(ctx.get(), digest, &len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

// An operand as the kernel sees it: a kernel-local node ("%3"), or a value from outside known
// only by its shape ("in f32[8,16]{1,0}"; a parameter and another kernel's output read alike).
// Bitcasts between are views and are followed.
std::string OperandText(const KernelView& view, const ir::Instruction* operand) {
  std::string via;
  while (operand->opcode() == ir::Opcode::kBitcast && operand->operand_count() == 1) {
    absl::StrAppend(&via, " via ", operand->shape().ToString(true));
    operand = operand->operand(0);
  }
  for (int32_t i = 0; i < view.size(); ++i) {
    if (view.instrs[static_cast<size_t>(i)] == operand) return absl::StrCat("%", i, via);
  }
  return absl::StrCat("in ", operand->shape().ToString(true), via);
}

// The ops of a called computation (a reducer's add or max), in instruction order.
std::string CalledText(const ir::Computation& c) {
  std::string out = "{";
  for (const ir::Instruction* i : c.instructions()) {
    absl::StrAppend(&out, std::string(ir::OpcodeName(i->opcode())), " ", i->shape().ToString(true),
                    " ", ir::InstructionAttributesKey(*i), ";");
  }
  return out + "}";
}

}  // namespace

absl::StatusOr<std::string> KernelKey(const OpGraph& graph, const ir::Module& module,
                                      const std::vector<int32_t>& nodes) {
  absl::StatusOr<KernelView> view = MakeKernelView(graph, module, nodes);
  if (!view.ok()) return view.status();
  std::string text = kKeyVersion;
  for (int32_t i = 0; i < view->size(); ++i) {
    const OpNode& n = view->node(i);
    absl::StrAppend(&text, "\n", i, " ", n.opcode);
    if (const ir::Instruction* instr = view->instrs[static_cast<size_t>(i)]; instr != nullptr) {
      absl::StrAppend(&text, " ", instr->shape().ToString(true), " [",
                      ir::InstructionAttributesKey(*instr), "] (");
      for (const ir::Instruction* operand : instr->operands()) {
        absl::StrAppend(&text, OperandText(*view, operand), ", ");
      }
      text += ")";
      for (const ir::Computation* c : instr->called_computations()) text += CalledText(*c);
    } else {
      // A hand-built graph: what the op graph knows.
      absl::StrAppend(&text, " ", n.element_type, "[", n.rows, ",", n.cols, "] (");
      for (const OpInput& in : n.inputs) {
        auto it = view->local.find(in.node);
        if (it != view->local.end()) {
          absl::StrAppend(&text, "%", it->second, ", ");
        } else {
          absl::StrAppend(&text, "in ", in.bytes, ", ");
        }
      }
      text += ")";
    }
    if (view->is_output[static_cast<size_t>(i)]) text += " out";
  }
  return Sha256Hex(text);
}

}  // namespace mltune::costmodels::features
