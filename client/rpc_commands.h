// The `mltune` CLI's RPC subcommands: they talk to a running mltuned through client/rpc_client.h.
// Like the offline ones (cli_commands.h) each writes results to `out`, errors and progress to
// `err`, and returns the process exit code:
//   0  success
//   1  error: bad arguments or file, the daemon refused the request (the message says why), or the
//      job failed or was cancelled
//   2  the daemon cannot be reached ("cannot reach mltuned at ADDRESS (...): is it running? ...")
//   3  no result: `lookup` found nothing cached, or `result` names a job still queued or running
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace mltune::client {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUnreachable = 2;
inline constexpr int kExitNoResult = 3;

// How `--watch` and `watch` show progress on `err`: one line rewritten in place with '\r' (a
// terminal), or a plain line per state change and at most one a second otherwise (logs, pipes).
enum class ProgressStyle { kLive, kLines, kNone };

// How every RPC subcommand reaches the daemon beyond its address (--ca, --cert, --key, --token);
// an empty field falls back to $MLTUNE_CA, $MLTUNE_CERT, $MLTUNE_KEY, $MLTUNE_TOKEN. One per
// process: the CLI binds its flags here.
struct ConnectionFlags {
  std::string ca, cert, key, token;
};
ConnectionFlags& GlobalConnectionFlags();

struct SubmitCommand {
  std::string server;  // "" = ServerAddress("")
  std::string file;
  std::vector<std::string> tasks;  // empty = {"pass-order"}
  std::string target = "cpu";
  std::string strategy;  // "" = the daemon's default
  int64_t budget = 0;    // steps; 0 = the daemon's default
  double seconds = 0;
  std::vector<std::string> options;  // "key=value"
  bool skip_cache = false;
  bool watch = false;
  std::string output;  // write the optimized HLO here (needs a result: cached or --watch)
  bool json = false;
  ProgressStyle progress = ProgressStyle::kLines;
};
// `mltune submit`: prints the job id, or the cached result, or the job it attached to; with
// `watch`, follows the job to its end and prints the result.
int RunSubmit(const SubmitCommand& cmd, std::ostream& out, std::ostream& err);

struct WatchCommand {
  std::string server;
  std::string job;
  std::string output;
  bool json = false;
  ProgressStyle progress = ProgressStyle::kLines;
};
// `mltune watch JOB`: progress until the job finishes, then its result.
int RunWatch(const WatchCommand& cmd, std::ostream& out, std::ostream& err);

struct ResultCommand {
  std::string server;
  std::string job;
  std::string output;
  std::string plot;  // write the search's best-so-far curves here (SVG)
  bool json = false;
};
// `mltune result JOB`: the finished job's per-task scores, pass sequence and provenance; with
// `plot`, an SVG of each task's best score against search steps (client/result_plot.h).
int RunResult(const ResultCommand& cmd, std::ostream& out, std::ostream& err);

struct LookupCommand {
  std::string server;
  std::string file;         // exclusive with `fingerprint`
  std::string fingerprint;  // as printed by `mltune fingerprint`
  std::string task;         // "" = every task
  std::string target;       // "" = every target
  std::string output;
  bool json = false;
};
// `mltune lookup`: what the cache holds for a graph, without queuing anything.
int RunLookup(const LookupCommand& cmd, std::ostream& out, std::ostream& err);

struct CancelCommand {
  std::string server;
  std::string job;
};
int RunCancel(const CancelCommand& cmd, std::ostream& out, std::ostream& err);

// `workers`, `strategies` and `stats` take only the server and --json.
struct ServerCommand {
  std::string server;
  bool json = false;
};
int RunWorkers(const ServerCommand& cmd, std::ostream& out, std::ostream& err);
int RunStrategies(const ServerCommand& cmd, std::ostream& out, std::ostream& err);
int RunStats(const ServerCommand& cmd, std::ostream& out, std::ostream& err);

}  // namespace mltune::client
