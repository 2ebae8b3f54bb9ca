#include "optimizers/pass_order/engine.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/fingerprint.h"
#include "ir/verifier.h"
#include "passes/registry.h"

namespace mltune::opt::pass_order::internal {
namespace {

// Failures kept with their messages; later ones are only counted.
constexpr size_t kMaxRecordedFailures = 1000;

std::string TransitionKey(const std::string& fingerprint, int a) {
  return absl::StrCat(fingerprint, "/", a);
}

}  // namespace

absl::StatusOr<std::shared_ptr<Engine>> Engine::Create(const PassOrderOptions& options) {
  const passes::Registry& registry =
      options.registry != nullptr ? *options.registry : passes::Registry::Global();
  std::vector<std::string> names = options.passes.empty() ? registry.Names() : options.passes;
  if (names.empty()) return absl::InvalidArgumentError("pass ordering needs at least one pass");
  if (options.episode_length <= 0) {
    return absl::InvalidArgumentError("pass ordering needs episode_length > 0");
  }
  std::vector<std::unique_ptr<passes::Pass>> instances;
  for (const std::string& name : names) {
    if (std::count(names.begin(), names.end(), name) > 1) {
      return absl::InvalidArgumentError(absl::StrCat("pass ", name, " listed twice"));
    }
    absl::StatusOr<std::unique_ptr<passes::Pass>> pass = registry.Create(name);
    if (!pass.ok()) return pass.status();
    instances.push_back(*std::move(pass));
  }
  return std::shared_ptr<Engine>(new Engine(options, std::move(instances), std::move(names)));
}

Engine::Engine(PassOrderOptions options, std::vector<std::unique_ptr<passes::Pass>> passes,
               std::vector<std::string> names)
    : options_(std::move(options)), passes_(std::move(passes)), names_(std::move(names)) {}

int Engine::ActionIndex(std::string_view name) const {
  auto it = std::find(names_.begin(), names_.end(), name);
  return it == names_.end() ? -1 : static_cast<int>(it - names_.begin());
}

absl::StatusOr<NodePtr> Engine::AddRoot(const ir::Module& module) {
  absl::Status verified = ir::VerifyModule(module);
  if (!verified.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the module to optimize does not verify: ", verified.message()));
  }
  ++stats_.fingerprints;
  std::string fingerprint = ir::Fingerprint(module);
  if (NodePtr existing = Lookup(fingerprint)) return existing;
  ++stats_.clones;
  return NewNode(module.Clone(), std::move(fingerprint));
}

NodePtr Engine::Lookup(const std::string& fingerprint) {
  auto it = nodes_.find(fingerprint);
  if (it == nodes_.end()) return nullptr;
  NodePtr node = it->second.lock();
  if (node != nullptr) Pin(node);
  return node;
}

const std::string& Engine::Fingerprint(const Node& node) {
  if (node.fingerprint.empty()) {
    ++stats_.fingerprints;
    node.fingerprint = ir::Fingerprint(*node.module);
    auto [it, inserted] = nodes_.try_emplace(node.fingerprint);
    if (inserted || it->second.expired()) it->second = node.weak_from_this();
  }
  return node.fingerprint;
}

NodePtr Engine::NewNode(std::unique_ptr<ir::Module> module, std::string fingerprint) {
  auto node = std::make_shared<Node>();
  node->op_count = OpCount(*module);
  node->instructions = module->instruction_count();
  node->score =
      options_.cost_model ? options_.cost_model(*module) : static_cast<double>(node->op_count);
  node->module = std::move(module);
  ++stats_.distinct_modules;
  // Forget dead entries now and then so the index stays proportional to live modules.
  if (nodes_.size() >= 1024 && nodes_.size() >= 2 * pin_index_.size()) {
    std::erase_if(nodes_, [](const auto& entry) { return entry.second.expired(); });
  }
  if (!fingerprint.empty()) {
    node->fingerprint = fingerprint;
    nodes_[std::move(fingerprint)] = node;
  }
  Pin(node);
  return node;
}

void Engine::Pin(const NodePtr& node) {
  auto it = pin_index_.find(node.get());
  if (it != pin_index_.end()) {
    pinned_.splice(pinned_.begin(), pinned_, it->second);
    return;
  }
  pinned_.push_front(node);
  pin_index_[node.get()] = pinned_.begin();
  pinned_instructions_ += node->instructions;
  // Keep at least the newest module even when it alone exceeds the limit.
  while (pinned_instructions_ > options_.cache_instructions && pinned_.size() > 1) {
    pinned_instructions_ -= pinned_.back()->instructions;
    pin_index_.erase(pinned_.back().get());
    pinned_.pop_back();
  }
}

void Engine::Record(const Node& from, int a, Transition t) {
  transitions_[TransitionKey(from.fingerprint, a)] = std::move(t);
}

Applied Engine::Fail(const NodePtr& from, int a, std::string message) {
  ++stats_.failures;
  if (failures_.size() < kMaxRecordedFailures) {
    failures_.push_back({names_[a], Fingerprint(*from), message});
  }
  Record(*from, a, Transition{false, {}, message});
  return Applied{from, false, std::move(message)};
}

Applied Engine::Apply(const NodePtr& from, int a, bool exact) {
  // Sources are fingerprinted, results only once they become sources: equal modules reached by
  // different paths share their transitions, and the children a search scores and drops are
  // never fingerprinted.
  const std::string& from_fingerprint = Fingerprint(*from);
  auto it = transitions_.find(TransitionKey(from_fingerprint, a));
  if (it != transitions_.end()) {
    Transition& t = it->second;
    if (!t.changed) {
      ++stats_.cache_hits;
      return Applied{from, false, t.error};
    }
    if (NodePtr to = t.result.lock()) {
      ++stats_.cache_hits;
      if (exact && Fingerprint(*to) == from_fingerprint) {
        Record(*from, a, Transition{});
        return Applied{from, false, ""};
      }
      Pin(to);
      return Applied{std::move(to), true, ""};
    }
    // The result was evicted: run the pass again.
  }

  ++stats_.pass_runs;
  std::unique_ptr<ir::Module> module;
  if (scratch_ != nullptr && scratch_source_ == from) {
    module = std::move(scratch_);
  } else {
    ++stats_.clones;
    module = from->module->Clone();
  }
  scratch_.reset();
  scratch_source_.reset();
  absl::StatusOr<bool> changed = false;
  try {
    changed = passes_[a]->Run(*module);
  } catch (const std::exception& e) {
    changed = absl::InternalError(absl::StrCat("exception: ", e.what()));
  }
  if (!changed.ok()) return Fail(from, a, std::string(changed.status().message()));
  if (!*changed) {
    // Untouched (a pass reports no change only when there is none): reusable for the next pass.
    scratch_ = std::move(module);
    scratch_source_ = from;
    Record(*from, a, Transition{});
    return Applied{from, false, ""};
  }
  if (options_.verify) {
    absl::Status verified = ir::VerifyModule(*module);
    if (!verified.ok()) {
      return Fail(from, a, absl::StrCat("invalid result: ", verified.message()));
    }
  }
  std::string fingerprint;
  if (exact) {
    ++stats_.fingerprints;
    fingerprint = ir::Fingerprint(*module);
    if (fingerprint == from_fingerprint) {
      Record(*from, a, Transition{});
      return Applied{from, false, ""};
    }
  }
  NodePtr to = fingerprint.empty() ? nullptr : Lookup(fingerprint);
  if (to == nullptr) to = NewNode(std::move(module), std::move(fingerprint));
  Record(*from, a, Transition{true, to, ""});
  return Applied{std::move(to), true, ""};
}

const Observation& Engine::Observe(const Node& node) {
  if (node.observation == nullptr) {
    auto o = std::make_unique<Observation>();
    o->op_count = node.op_count;
    o->score = node.score;
    o->opcode_histogram = OpcodeHistogram(*node.module);
    o->features = GraphFeatures(*node.module);
    o->fingerprint = Fingerprint(node);
    node.observation = std::move(o);
  }
  return *node.observation;
}

PassOrderStats Engine::stats() const { return stats_; }

}  // namespace mltune::opt::pass_order::internal
