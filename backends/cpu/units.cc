#include "backends/cpu/units.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <numeric>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace mltune::backends::cpu {
namespace {

// A program as laid out for splitting (units.h). The entry section is text[0], calls[0],
// text[1], ..., one block of calls per entry (the plain one, then the profiled one if any).
struct Layout {
  std::string_view header;
  std::vector<std::string> names;          // the kernel sections' functions, in order
  std::vector<std::string_view> sections;  // their text
  std::vector<std::string_view> text;
  std::vector<std::vector<std::string_view>> calls;  // each line with its newline
};

// The function a line of calls runs: the name before "(b, ws);".
std::string_view CalledName(std::string_view line) {
  const size_t end = line.find("(b, ws);");
  if (end == std::string_view::npos) return {};
  size_t begin = end;
  while (begin > 0 &&
         (std::isalnum(static_cast<unsigned char>(line[begin - 1])) || line[begin - 1] == '_')) {
    --begin;
  }
  return line.substr(begin, end - begin);
}

bool Parse(const std::string& source, Layout* p) {
  enum { kHeader, kKernel, kEntry, kCalls } state = kHeader;
  const std::string_view all(source);
  const std::string_view kernel_marker(kKernelSection);
  size_t piece = 0;  // where the current header, section or entry text began
  for (size_t at = 0; at < all.size();) {
    size_t next = all.find('\n', at);
    next = next == std::string_view::npos ? all.size() : next + 1;
    const std::string_view line = all.substr(at, next - at);
    const bool kernel = line.substr(0, kernel_marker.size()) == kernel_marker;
    if (kernel || line == kEntrySection) {
      if (state == kHeader) p->header = all.substr(0, at);
      if (state == kKernel) p->sections.push_back(all.substr(piece, at - piece));
      if (state != kHeader && state != kKernel) return false;
      if (kernel) {
        p->names.emplace_back(
            line.substr(kernel_marker.size(), line.size() - kernel_marker.size() - 1));
      }
      state = kernel ? kKernel : kEntry;
      piece = at;
    } else if (line == kCallsBegin) {
      if (state != kEntry) return false;
      p->text.push_back(all.substr(piece, at - piece));
      p->calls.emplace_back();
      state = kCalls;
    } else if (line == kCallsEnd) {
      if (state != kCalls) return false;
      state = kEntry;
      piece = next;
    } else if (state == kCalls) {
      if (CalledName(line).empty()) return false;
      p->calls.back().push_back(line);
    }
    at = next;
  }
  if (state != kEntry || p->calls.empty() || p->calls.size() > 2) return false;
  p->text.push_back(all.substr(piece));
  return p->calls.size() == 1 || p->calls[1].size() == p->calls[0].size();
}

// Contiguous ranges of `weights` (at most `n`) whose largest total is the least possible.
std::vector<size_t> CutPoints(const std::vector<size_t>& weights, size_t n) {
  auto cuts = [&](size_t capacity) {
    std::vector<size_t> starts = {0};
    size_t load = 0;
    for (size_t i = 0; i < weights.size(); ++i) {
      if (load + weights[i] > capacity && load > 0) {
        starts.push_back(i);
        load = 0;
      }
      load += weights[i];
    }
    return starts;
  };
  size_t lo = *std::max_element(weights.begin(), weights.end());
  size_t hi = std::accumulate(weights.begin(), weights.end(), size_t{0});
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (cuts(mid).size() <= n) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return cuts(lo);
}

std::string PartName(size_t unit, bool profiled) {
  return absl::StrCat("mltune_part_", unit, profiled ? "_profiled" : "");
}

std::string PartSignature(size_t unit, bool profiled) {
  return absl::StrCat(kHidden, "void ", PartName(unit, profiled),
                      "(void* const* args, void* const* results, char* scratch, char* ws",
                      profiled ? ", int64_t* kernel_ns" : "", ")");
}

}  // namespace

std::vector<std::string> SplitIntoUnits(const std::string& source, int jobs, size_t min_unit_bytes,
                                        size_t max_unit_bytes) {
  Layout p;
  if (!Parse(source, &p)) return {source};
  const std::vector<std::string_view>& calls = p.calls[0];
  const size_t blocks = p.calls.size();
  // A call's weight: its lines, and the kernels it calls first.
  std::map<std::string_view, size_t> section_of;
  for (size_t s = 0; s < p.names.size(); ++s) section_of[p.names[s]] = s;
  std::vector<size_t> first_call(p.sections.size(), 0), weights(calls.size(), 0);
  std::vector<bool> called(p.sections.size(), false);
  for (size_t i = 0; i < calls.size(); ++i) {
    for (size_t b = 0; b < blocks; ++b) weights[i] += p.calls[b][i].size();
    auto it = section_of.find(CalledName(calls[i]));
    if (it == section_of.end() || called[it->second]) continue;
    called[it->second] = true;
    first_call[it->second] = i;
    weights[i] += p.sections[it->second].size();
  }
  const size_t total = std::accumulate(weights.begin(), weights.end(), size_t{0});
  const size_t most = std::max<size_t>(max_unit_bytes, 1);
  const size_t n = std::min(
      calls.size(),
      std::max((total + most - 1) / most, std::min(static_cast<size_t>(std::max(jobs, 1)),
                                                   total / std::max<size_t>(min_unit_bytes, 1))));
  if (n < 2) return {source};
  std::vector<size_t> starts = CutPoints(weights, n);
  const size_t units = starts.size();
  if (units < 2) return {source};
  starts.push_back(calls.size());
  std::vector<size_t> unit_of_call(calls.size());
  for (size_t u = 0; u < units; ++u) {
    for (size_t i = starts[u]; i < starts[u + 1]; ++i) unit_of_call[i] = u;
  }
  // Each kernel is defined in the unit that calls it first; hidden where others call it too.
  std::vector<size_t> owner(p.sections.size(), 0);
  std::vector<bool> shared(p.sections.size(), false);
  for (size_t s = 0; s < p.sections.size(); ++s) owner[s] = unit_of_call[first_call[s]];
  std::vector<std::string> out(units, std::string(p.header));
  std::vector<std::vector<bool>> declared(units, std::vector<bool>(p.sections.size(), false));
  for (size_t i = 0; i < calls.size(); ++i) {
    auto it = section_of.find(CalledName(calls[i]));
    if (it == section_of.end()) continue;
    const size_t s = it->second, u = unit_of_call[i];
    if (owner[s] == u || declared[u][s]) continue;
    shared[s] = declared[u][s] = true;
    absl::StrAppend(&out[u], kHidden, "void ", p.names[s], "(char* const* b, char* ws);\n");
  }
  for (size_t s = 0; s < p.sections.size(); ++s) {
    std::string section(p.sections[s]);
    if (shared[s]) {
      const std::string local = absl::StrCat("\nstatic void ", p.names[s], "(char* const* b");
      const size_t at = section.find(local);
      if (at == std::string::npos) return {source};
      section.replace(at + 1, 7, kHidden);  // "static "
    }
    out[owner[s]] += section;
  }
  for (size_t u = 0; u < units; ++u) {
    for (size_t b = 0; b < blocks; ++b) {
      absl::StrAppend(&out[u], PartSignature(u, b == 1),
                      " {\n  (void)args; (void)results; (void)scratch; (void)ws;\n");
      for (size_t i = starts[u]; i < starts[u + 1]; ++i) out[u].append(p.calls[b][i]);
      out[u] += "}\n";
    }
  }
  // The entry, in the last unit, runs the parts where it ran the calls.
  std::string& last = out[units - 1];
  for (size_t u = 0; u + 1 < units; ++u) {
    for (size_t b = 0; b < blocks; ++b) absl::StrAppend(&last, PartSignature(u, b == 1), ";\n");
  }
  for (size_t t = 0; t < p.text.size(); ++t) {
    last.append(p.text[t]);
    if (t == blocks) break;
    for (size_t u = 0; u < units; ++u) {
      absl::StrAppend(&last, "  ", PartName(u, t == 1), "(args, results, scratch, ws",
                      t == 1 ? ", kernel_ns" : "", ");\n");
    }
  }
  return out;
}

}  // namespace mltune::backends::cpu
