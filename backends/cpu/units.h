// Cutting a generated program into translation units that compile in parallel. A module's
// program (codegen.h) is one C++ file that compiles alone, laid out as a header (the prelude and
// the constants' declarations), one section per kernel function (`static`), then the entry
// section, whose entries (plain and profiled) each run the kernels as a block of calls, one line
// per kernel; marker lines delimit them. A split cuts the calls into contiguous ranges: each unit
// is the header, the kernel functions its range calls first, and a part function running its
// range, into which GCC inlines the small kernels as it does into the one entry (called from
// elsewhere, GCC 12 took 1.9 s per small strided-gather kernel, against milliseconds inlined). A
// kernel the ranges of several units call is defined in the first with hidden external linkage
// and declared in the others; the entry, in the last unit, calls the parts in order.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace mltune::backends::cpu {

// Marker lines, each alone on its line: a kernel section opens with kKernelSection and the
// function's name, whose definition in it starts with "static void NAME(char* const* b, char*
// ws) {"; the entry section with kEntrySection; each block of calls, one line per kernel naming
// its function as "NAME(b, ws);", sits between kCallsBegin and kCallsEnd.
inline constexpr char kUnitMarker[] = "// @mltune-unit ";
inline constexpr char kKernelSection[] = "// @mltune-unit kernel ";
inline constexpr char kEntrySection[] = "// @mltune-unit entry\n";
inline constexpr char kCallsBegin[] = "// @mltune-unit calls\n";
inline constexpr char kCallsEnd[] = "// @mltune-unit end\n";
// What replaces `static` on a kernel called from several units, and declares the parts and the
// constants segment's base: one object's units see each other, nothing outside it does.
inline constexpr char kHidden[] = "[[gnu::visibility(\"hidden\")]] ";

// Below this much kernel text per unit a unit's own compiler start-up and header (about half a
// second of g++) outweighs what compiling it beside the others saves.
inline constexpr size_t kMinUnitBytes = 64 << 10;
// Above this much, a unit's compile time grows faster than its text (GCC's alias walking and
// register allocation over the part function its kernels are inlined into): BERT's training
// step took 19.9 s as one unit, 14.7 s as two, 10.3 s as four and 9.6 s as eight, one after the
// other; ResNet-50's 23.3, 15.7 and 14.1 s.
inline constexpr size_t kMaxUnitBytes = 96 << 10;

// `source` as translation units of about equal size: `jobs` of them where each gets
// `min_unit_bytes` of kernels and calls or more, and more where needed so none gets much over
// `max_unit_bytes`. One unit, `source` itself, when it is not laid out as above (a kernel
// compiled alone has no block of calls), has fewer than two calls, or is small enough.
std::vector<std::string> SplitIntoUnits(const std::string& source, int jobs,
                                        size_t min_unit_bytes = kMinUnitBytes,
                                        size_t max_unit_bytes = kMaxUnitBytes);

}  // namespace mltune::backends::cpu
