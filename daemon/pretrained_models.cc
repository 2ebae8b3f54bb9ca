#include "daemon/pretrained_models.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "nlohmann/json.hpp"

namespace mltune::daemon {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::string> ReadWhole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  std::ostringstream data;
  data << in.rdbuf();
  return data.str();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> InstallPretrainedModels(storage::Store& store,
                                                                 const std::string& dir) {
  std::vector<fs::path> checkpoints;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".ckpt") checkpoints.push_back(entry.path());
  }
  if (ec) return absl::NotFoundError(absl::StrCat("--pretrained-dir ", dir, ": ", ec.message()));
  std::sort(checkpoints.begin(), checkpoints.end());
  std::vector<std::string> installed;
  for (const fs::path& checkpoint : checkpoints) {
    const std::string name =
        absl::StrReplaceAll(checkpoint.stem().string(), {{kPretrainedSeparator, "/"}});
    fs::path meta_path = checkpoint;
    meta_path.replace_extension(".json");
    absl::StatusOr<std::string> meta_text = ReadWhole(meta_path);
    if (!meta_text.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(checkpoint.string(), " has no metadata file ", meta_path.string()));
    }
    nlohmann::json meta = nlohmann::json::parse(*meta_text, nullptr, /*allow_exceptions=*/false);
    if (!meta.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(meta_path.string(), ": not a JSON object (the checkpoint's metadata)"));
    }
    absl::StatusOr<std::string> data = ReadWhole(checkpoint);
    if (!data.ok()) return data.status();
    meta["origin"] = "pretrained";
    meta["file"] = checkpoint.filename().string();
    absl::Status put = store.PutModel(name, 0, *data, meta.dump());
    if (absl::IsAlreadyExists(put)) continue;
    if (!put.ok()) return put;
    installed.push_back(name);
  }
  return installed;
}

std::string ModelOrigin(const storage::ModelRecord& record) {
  const nlohmann::json meta =
      nlohmann::json::parse(record.metadata_json, nullptr, /*allow_exceptions=*/false);
  if (meta.is_object() && meta.contains("origin") && meta["origin"].is_string()) {
    return meta["origin"].get<std::string>();
  }
  const std::time_t seconds = static_cast<std::time_t>(record.created_ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", &utc);
  return absl::StrCat("trained ", date);
}

}  // namespace mltune::daemon
