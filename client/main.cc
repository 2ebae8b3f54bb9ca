// `mltune`: the command-line client. Offline subcommands work on HLO files directly.
#include <iostream>

#include "CLI/CLI.hpp"
#include "client/cli_commands.h"

int main(int argc, char** argv) {
  using namespace mltune::client;
  CLI::App app{"mltune: ML-compiler autotuning client. Offline subcommands read XLA HLO text."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "mltune 0.1.0");

  ParseCommand parse;
  auto* parse_cmd = app.add_subcommand(
      "parse", "Parse and verify; print computations, instruction count and an opcode histogram");
  parse_cmd->add_option("file", parse.file, "HLO text file (.hlo, .txt, or .gz)")->required();
  parse_cmd->add_flag("--json", parse.json, "Print JSON instead of a table");

  PrintCommand print;
  bool no_metadata = false;
  auto* print_cmd = app.add_subcommand("print", "Parse, verify and print canonical HLO text");
  print_cmd->add_option("file", print.file, "HLO text file")->required();
  print_cmd->add_flag("--no-metadata", no_metadata, "Omit metadata={...}");
  print_cmd->add_flag("--operand-shapes", print.operand_shapes, "Print operand shapes inline");

  EvalCommand eval;
  auto* eval_cmd = app.add_subcommand(
      "eval", "Evaluate on seeded random inputs; print an output summary and a digest");
  eval_cmd->add_option("file", eval.file, "HLO text file")->required();
  eval_cmd->add_option("--seed", eval.seed, "Seed of the random inputs")->default_val(0);
  eval_cmd->add_flag("--json", eval.json, "Print JSON instead of a table");

  FingerprintCommand fingerprint;
  auto* fp_cmd = app.add_subcommand(
      "fingerprint", "Structural SHA-256 (ignores names, ids and metadata): the cache key");
  fp_cmd->add_option("file", fingerprint.file, "HLO text file")->required();

  auto* passes_cmd = app.add_subcommand("passes", "List the HLO passes, one line each");

  OptCommand opt;
  auto* opt_cmd = app.add_subcommand(
      "opt", "Run XLA's default pipeline or a list of passes; print op counts before and after");
  opt_cmd->add_option("file", opt.file, "HLO text file")->required();
  auto* pipeline_opt =
      opt_cmd->add_option("--pipeline", opt.pipeline, "Default pipeline: cpu or gpu (XLA's order)");
  auto* passes_opt =
      opt_cmd->add_option("--passes", opt.passes, "Comma-separated pass names (mltune passes)")
          ->delimiter(',');
  pipeline_opt->excludes(passes_opt);
  opt_cmd->add_option("-o,--output", opt.output, "Write the optimized module here");
  opt_cmd->add_flag("--verify", opt.verify,
                    "Evaluate before and after on random inputs; report the largest difference");
  opt_cmd->add_flag("--time-passes", opt.time_passes,
                    "Print the time and change count of every pass, slowest first");

  SearchCommand search;
  auto* search_cmd = app.add_subcommand(
      "search", "Search pass orders; compare the best with XLA's default pipeline");
  search_cmd->add_option("problem", search.problem, "Search problem: pass-order")->required();
  search_cmd->add_option("file", search.file, "HLO text file")->required();
  search_cmd
      ->add_option("--strategy", search.strategy, "random, greedy, beam, annealing or evolutionary")
      ->default_val("greedy");
  search_cmd->add_option("--budget", search.budget, "Budget in environment steps")
      ->default_val(1000);
  search_cmd->add_option("--seconds", search.max_seconds, "Time budget (0: none)");
  search_cmd->add_option("--seed", search.seed, "Seed")->default_val(0);
  search_cmd->add_option("--max-length", search.max_length, "Longest pass sequence")
      ->default_val(40);
  search_cmd->add_option("--target", search.target, "Baseline pipeline: cpu or gpu")
      ->default_val("cpu");
  search_cmd->add_option("-o,--output", search.output, "Write the best module here");
  search_cmd->add_flag("!--no-warm-start", search.warm_start,
                       "Do not start from the default pipeline's order (search from scratch)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; any usage error exits 1 like every other failure.
    return app.exit(e) == 0 ? 0 : 1;
  }
  print.metadata = !no_metadata;

  if (*parse_cmd) return RunParse(parse, std::cout, std::cerr);
  if (*print_cmd) return RunPrint(print, std::cout, std::cerr);
  if (*eval_cmd) return RunEval(eval, std::cout, std::cerr);
  if (*fp_cmd) return RunFingerprint(fingerprint, std::cout, std::cerr);
  if (*passes_cmd) return RunListPasses(std::cout, std::cerr);
  if (*opt_cmd) return RunOpt(opt, std::cout, std::cerr);
  if (*search_cmd) return RunSearch(search, std::cout, std::cerr);
  return 1;
}
