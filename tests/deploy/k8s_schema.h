// Kubernetes manifests read as Kubernetes reads them and checked against the Kubernetes JSON
// schemas: a YAML reader (libyaml) and a JSON Schema validator for the keywords those schemas use.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace mltune::testing::k8s {

// The documents of a YAML stream as JSON, empty documents left out. Plain scalars resolve as in
// YAML 1.1, like kubectl's reader (go-yaml v2): `yes` and `on` are booleans, `0440` is octal.
// Returns false with `error` set ("LINE:COLUMN: problem") on a syntax error, a duplicate key, an
// alias or merge key, or a tag other than the core ones.
bool ParseYamlStream(std::string_view text, std::vector<nlohmann::json>* documents,
                     std::string* error);

// Where a field is, as a message names it: spec.template.spec.containers[0].image, with keys that
// are not plain words quoted (metadata.labels["app.kubernetes.io/name"]).
std::string JoinPath(const std::string& parent, const std::string& key);
std::string JoinPath(const std::string& parent, size_t index);

// The schemas of one Kubernetes version in kubernetes-json-schema's "-local-strict" layout:
// <kind>-<group>-<version>.json per kind, whose "$ref"s point into _definitions.json.
class SchemaSet {
 public:
  // Reads every *.json in `dir`; false with `error` set when one does not parse.
  bool Load(const std::string& dir, std::string* error);

  // The errors of `object` against the schema of its apiVersion and kind, each "PATH: what"; none
  // when it conforms. An object whose kind has no schema here is one error saying so.
  std::vector<std::string> Validate(const nlohmann::json& object) const;

  // The schema file's name for an apiVersion and kind: "apps/v1", "Deployment" gives
  // "deployment-apps-v1", "v1", "Service" gives "service-v1".
  static std::string SchemaName(const std::string& api_version, const std::string& kind);

 private:
  // `file` is the schema file `schema` is in, against which a "#..." reference resolves.
  void Check(const nlohmann::json& schema, const std::string& file, const nlohmann::json& value,
             const std::string& path, std::vector<std::string>* errors) const;
  const nlohmann::json* Resolve(const std::string& ref, std::string* file) const;

  std::map<std::string, nlohmann::json> schemas_;  // by file name without ".json"
};

}  // namespace mltune::testing::k8s
