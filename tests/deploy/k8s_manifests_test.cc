// Checks deploy/k8s: every manifest against the Kubernetes 1.29 JSON schema of its kind and API
// version, and the points between objects that no schema sees (probes, resources, Secret keys,
// the Service's selector, the GPU request).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/deploy/k8s_schema.h"

namespace mltune::testing::k8s {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const fs::path kManifestDir = fs::path(MLTUNE_SOURCE_DIR) / "deploy" / "k8s";
const fs::path kSchemaDir =
    fs::path(MLTUNE_SOURCE_DIR) / "tests" / "deploy" / "schemas" / "v1.29.0-local-strict";
// Left out of kustomization.yaml on purpose: it holds placeholders (secret.yaml says why).
constexpr char kSecretFile[] = "secret.yaml";

// One object of deploy/k8s and the file it came from.
struct Manifest {
  std::string file;
  json object;

  std::string kind() const { return object.value("kind", ""); }
  std::string name() const { return object.value("/metadata/name"_json_pointer, ""); }
  std::string Where() const { return file + " " + kind() + "/" + name(); }
};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const SchemaSet& Schemas() {
  static const SchemaSet* schemas = [] {
    auto* set = new SchemaSet();
    std::string error;
    if (!set->Load(kSchemaDir.string(), &error)) ADD_FAILURE() << error;
    return set;
  }();
  return *schemas;
}

// The *.yaml files of deploy/k8s, sorted.
std::vector<std::string> ManifestFiles() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(kManifestDir, ec)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Every object of deploy/k8s but the Kustomization; failures are test failures.
std::vector<Manifest> LoadManifests() {
  std::vector<Manifest> manifests;
  for (const std::string& file : ManifestFiles()) {
    if (file == "kustomization.yaml") continue;
    std::vector<json> documents;
    std::string error;
    EXPECT_TRUE(ParseYamlStream(ReadFile(kManifestDir / file), &documents, &error))
        << file << ":" << error;
    for (json& document : documents) manifests.push_back({file, std::move(document)});
  }
  return manifests;
}

json LoadKustomization() {
  std::vector<json> documents;
  std::string error;
  EXPECT_TRUE(ParseYamlStream(ReadFile(kManifestDir / "kustomization.yaml"), &documents, &error))
      << error;
  return documents.size() == 1 ? documents[0] : json();
}

// The errors of YAML text: its syntax error, else every document's schema errors.
std::vector<std::string> ValidateYaml(std::string_view text) {
  std::vector<json> documents;
  std::string error;
  if (!ParseYamlStream(text, &documents, &error)) return {"YAML: " + error};
  std::vector<std::string> errors;
  for (const json& document : documents) {
    for (std::string& e : Schemas().Validate(document)) errors.push_back(std::move(e));
  }
  return errors;
}

// gtest's HasSubstr is gmock's, which the tests do not link.
::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << part << "\" is not in:" << text;
}

std::string Lines(const std::vector<std::string>& errors) {
  std::string text;
  for (const std::string& e : errors) text += "\n  " + e;
  return text;
}

// --- What the schema cannot check -------------------------------------------------------------

bool IsWorkload(const Manifest& m) { return m.kind() == "Deployment" || m.kind() == "DaemonSet"; }

const json& PodSpec(const Manifest& m) { return m.object["spec"]["template"]["spec"]; }

std::vector<json> Containers(const Manifest& m) {
  std::vector<json> containers;
  for (const char* field : {"initContainers", "containers"}) {
    if (PodSpec(m).contains(field)) {
      for (const json& c : PodSpec(m)[field]) containers.push_back(c);
    }
  }
  return containers;
}

// The container's command line: command, then args.
std::vector<std::string> Argv(const json& container) {
  std::vector<std::string> argv;
  for (const char* field : {"command", "args"}) {
    if (container.contains(field)) {
      for (const json& a : container[field]) argv.push_back(a.get<std::string>());
    }
  }
  return argv;
}

// The value of --flag in an argv, as --flag=VALUE or --flag VALUE.
std::optional<std::string> Flag(const std::vector<std::string>& argv, const std::string& flag) {
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i].starts_with(flag + "=")) return argv[i].substr(flag.size() + 1);
    if (argv[i] == flag && i + 1 < argv.size()) return argv[i + 1];
  }
  return std::nullopt;
}

std::string Program(const json& container) {
  std::vector<std::string> argv = Argv(container);
  return argv.empty() ? "" : argv[0];
}

// The port of HOST:PORT.
std::string Port(const std::string& address) { return address.substr(address.rfind(':') + 1); }

const Manifest* Find(const std::vector<Manifest>& all, const std::string& kind,
                     const std::string& name) {
  for (const Manifest& m : all) {
    if (m.kind() == kind && m.name() == name) return &m;
  }
  return nullptr;
}

bool Selects(const json& selector, const json& labels) {
  for (const auto& [key, value] : selector.items()) {
    if (!labels.contains(key) || labels[key] != value) return false;
  }
  return !selector.empty();
}

// Every container has a CPU and memory request and a memory limit, and names an image tag.
void CheckResources(const Manifest& m, std::vector<std::string>* errors) {
  for (const json& c : Containers(m)) {
    const std::string where = m.Where() + " container " + c.value("name", "?");
    for (const char* field :
         {"/resources/requests/cpu", "/resources/requests/memory", "/resources/limits/memory"}) {
      if (!c.contains(json::json_pointer(field))) errors->push_back(where + ": no " + field);
    }
    const std::string image = c.value("image", "");
    const size_t colon = image.rfind(':');
    if (colon == std::string::npos || image.substr(colon) == ":latest") {
      errors->push_back(where + ": image " + image + " has no fixed tag");
    }
  }
}

// Every $(VAR) of a command line is a variable of the container's env: Kubernetes leaves an
// undefined one in the argument as it is.
void CheckExpansions(const Manifest& m, std::vector<std::string>* errors) {
  static const std::regex kVariable(R"(\$\(([A-Za-z_][A-Za-z0-9_]*)\))");
  for (const json& c : Containers(m)) {
    std::set<std::string> env;
    for (const json& e : c.value("env", json::array())) env.insert(e["name"].get<std::string>());
    for (const std::string& arg : Argv(c)) {
      for (std::sregex_iterator it(arg.begin(), arg.end(), kVariable), end; it != end; ++it) {
        if (!env.count((*it)[1])) {
          errors->push_back(m.Where() + ": " + arg + " names $(" + (*it)[1].str() +
                            "), which the container's env does not define");
        }
      }
    }
  }
}

// Every absolute path a command line or probe passes (--tls-cert=/etc/...) is under a volume
// mount, and where that volume is a Secret projected by items, one of those items.
void CheckPaths(const Manifest& m, std::vector<std::string>* errors) {
  std::map<std::string, json> volumes;
  for (const json& v : PodSpec(m).value("volumes", json::array())) {
    volumes[v["name"].get<std::string>()] = v;
  }
  for (const json& c : Containers(m)) {
    std::vector<std::string> args = Argv(c);
    for (const char* probe : {"startupProbe", "readinessProbe", "livenessProbe"}) {
      if (!c.contains(probe) || !c[probe].contains("exec")) continue;
      for (const json& a : c[probe]["exec"]["command"]) args.push_back(a.get<std::string>());
    }
    for (const std::string& arg : args) {
      const size_t eq = arg.find('=');
      if (!arg.starts_with("--") || eq == std::string::npos || arg[eq + 1] != '/') continue;
      const std::string path = arg.substr(eq + 1);
      std::string dir, volume_name;  // of the mount the path is under
      for (const json& vm : c.value("volumeMounts", json::array())) {
        const std::string mount_path = vm["mountPath"].get<std::string>();
        if (path == mount_path || path.starts_with(mount_path + "/")) {
          dir = mount_path, volume_name = vm["name"].get<std::string>();
        }
      }
      if (dir.empty()) {
        errors->push_back(m.Where() + ": " + arg + " is under no volume mount");
        continue;
      }
      const json& volume = volumes[volume_name];
      if (!volume.contains("secret") || !volume["secret"].contains("items")) continue;
      // The path below the mount point, without its leading slash.
      const std::string relative = path.substr(std::min(path.size(), dir.size() + 1));
      bool projected = false;
      for (const json& item : volume["secret"]["items"]) projected |= item["path"] == relative;
      if (!projected) {
        errors->push_back(m.Where() + ": " + arg + " is no item of the Secret volume " +
                          volume_name);
      }
    }
  }
}

// Every Secret key the workloads read (env secretKeyRef, volume items) is a key of that Secret.
void CheckSecretKeys(const std::vector<Manifest>& all, const Manifest& m,
                     std::vector<std::string>* errors) {
  auto need = [&](const std::string& secret, const std::string& key) {
    const Manifest* s = Find(all, "Secret", secret);
    if (s == nullptr) {
      errors->push_back(m.Where() + ": reads the Secret " + secret + ", which is not defined");
    } else if (!s->object.value("stringData", json::object()).contains(key) &&
               !s->object.value("data", json::object()).contains(key)) {
      errors->push_back(m.Where() + ": reads the key \"" + key + "\" of the Secret " + secret +
                        ", which has no such key");
    }
  };
  for (const json& c : Containers(m)) {
    for (const json& e : c.value("env", json::array())) {
      if (e.contains("/valueFrom/secretKeyRef"_json_pointer)) {
        const json& ref = e["valueFrom"]["secretKeyRef"];
        need(ref["name"].get<std::string>(), ref["key"].get<std::string>());
      }
    }
  }
  for (const json& v : PodSpec(m).value("volumes", json::array())) {
    if (!v.contains("secret")) continue;
    for (const json& item : v["secret"].value("items", json::array())) {
      need(v["secret"]["secretName"].get<std::string>(), item["key"].get<std::string>());
    }
  }
}

// The mltuned Deployment: probes that dial its own --listen port, and a grace period longer than
// its drain.
void CheckDaemon(const Manifest& m, std::vector<std::string>* errors) {
  for (const json& c : Containers(m)) {
    if (Program(c) != "mltuned") continue;
    const std::vector<std::string> argv = Argv(c);
    const std::string listen = Flag(argv, "--listen").value_or("127.0.0.1:8470");
    bool port_declared = false;
    for (const json& p : c.value("ports", json::array())) {
      port_declared |= std::to_string(p.value("containerPort", 0)) == Port(listen);
    }
    if (!port_declared) errors->push_back(m.Where() + ": no containerPort for --listen " + listen);
    for (const char* probe : {"readinessProbe", "livenessProbe"}) {
      if (!c.contains(probe)) errors->push_back(m.Where() + ": mltuned has no " + probe);
    }
    for (const char* probe : {"startupProbe", "readinessProbe", "livenessProbe"}) {
      if (!c.contains(probe)) continue;
      if (!c[probe].contains("exec")) {
        errors->push_back(m.Where() + ": " + probe + " is not an exec probe (the port is TLS)");
        continue;
      }
      std::vector<std::string> command;
      for (const json& a : c[probe]["exec"]["command"]) command.push_back(a.get<std::string>());
      if (Flag(command, "--server") != "localhost:" + Port(listen)) {
        errors->push_back(m.Where() + ": " + probe + " does not dial localhost:" + Port(listen));
      }
    }
    // mltuned drains for --drain-seconds, then gives its server 2 s to stop.
    const double drain = std::stod(Flag(argv, "--drain-seconds").value_or("10"));
    const int grace = PodSpec(m).value("terminationGracePeriodSeconds", 30);
    if (grace <= drain + 2) {
      errors->push_back(m.Where() + ": terminationGracePeriodSeconds " + std::to_string(grace) +
                        " does not outlast mltuned's drain");
    }
  }
}

// A GPU worker asks for exactly one whole GPU and runs only where GPUs are.
void CheckGpuResources(const Manifest& m, const json& c, std::vector<std::string>* errors) {
  const json gpu = c.value("/resources/limits/nvidia.com~1gpu"_json_pointer, json());
  if (gpu != 1 && gpu != "1") errors->push_back(m.Where() + ": limits nvidia.com/gpu is not 1");
  const json request = c.value("/resources/requests/nvidia.com~1gpu"_json_pointer, gpu);
  if (request != gpu) errors->push_back(m.Where() + ": requests and limits of GPUs differ");
  if (PodSpec(m).value("nodeSelector", json::object()).empty() &&
      !PodSpec(m).contains("affinity")) {
    errors->push_back(m.Where() + ": no nodeSelector or affinity for GPU nodes");
  }
  bool tolerated = false;
  for (const json& t : PodSpec(m).value("tolerations", json::array())) {
    tolerated |= t.value("key", "") == "nvidia.com/gpu";
  }
  if (!tolerated) errors->push_back(m.Where() + ": no toleration of nvidia.com/gpu");
}

// Every worker dials a Service that exists; a GPU worker also asks for exactly one whole GPU and
// runs only where GPUs are.
void CheckWorker(const std::vector<Manifest>& all, const Manifest& m,
                 std::vector<std::string>* errors) {
  for (const json& c : Containers(m)) {
    const std::vector<std::string> argv = Argv(c);
    if (Program(c) != "mltune-worker") continue;
    if (Flag(argv, "--target") == "gpu") CheckGpuResources(m, c, errors);
    // The Service's DNS name, NAME.NAMESPACE.svc:PORT.
    static const std::regex kServiceAddress(
        R"(([a-z0-9-]+)\.([a-z0-9-]+)\.svc(\.cluster\.local)?:(\d+))");
    std::smatch match;
    const std::string server = Flag(argv, "--server").value_or("");
    const Manifest* service = nullptr;
    if (std::regex_match(server, match, kServiceAddress)) {
      service = Find(all, "Service", match[1]);
      bool port = false;
      if (service != nullptr && service->object["metadata"].value("namespace", "") == match[2]) {
        for (const json& p : service->object["spec"]["ports"]) {
          port |= std::to_string(p["port"].get<int>()) == match[4].str();
        }
      }
      if (!port) service = nullptr;
    }
    if (service == nullptr) {
      errors->push_back(m.Where() + ": --server " + server + " is no Service's name and port");
    }
  }
}

// Each Service selects the pods of a workload, and a named targetPort is a port of theirs.
void CheckService(const std::vector<Manifest>& all, const Manifest& service,
                  std::vector<std::string>* errors) {
  const json selector = service.object["spec"].value("selector", json::object());
  const Manifest* target = nullptr;
  for (const Manifest& m : all) {
    if (IsWorkload(m) &&
        Selects(selector, m.object.value("/spec/template/metadata/labels"_json_pointer, json()))) {
      target = &m;
    }
  }
  if (target == nullptr) {
    errors->push_back(service.Where() + ": its selector " + selector.dump() +
                      " matches no workload's pod labels");
    return;
  }
  for (const json& port : service.object["spec"]["ports"]) {
    if (!port.contains("targetPort") || !port["targetPort"].is_string()) continue;
    bool found = false;
    for (const json& c : Containers(*target)) {
      for (const json& p : c.value("ports", json::array())) {
        found |= p.value("name", "") == port["targetPort"];
      }
    }
    if (!found) {
      errors->push_back(service.Where() + ": targetPort " + port["targetPort"].dump() +
                        " is no port of " + target->Where());
    }
  }
}

// The committed Secret holds placeholders only, never a key or token that could be real.
void CheckSecretPlaceholders(const Manifest& m, std::vector<std::string>* errors) {
  if (m.object.contains("data")) {
    errors->push_back(m.Where() + ": has data (base64 would hide a real value); use stringData");
  }
  const json string_data = m.object.value("stringData", json::object());
  for (const auto& [key, value] : string_data.items()) {
    if (!value.is_string() || value.get<std::string>().find("REPLACE-ME") == std::string::npos) {
      errors->push_back(m.Where() + ": stringData." + key + " is not a REPLACE-ME placeholder");
    }
  }
}

// Everything the schemas cannot see, for deploy/k8s's objects and its kustomization.yaml.
std::vector<std::string> CheckSemantics(const std::vector<Manifest>& all, const json& kustomization,
                                        const std::vector<std::string>& files) {
  std::vector<std::string> errors;
  std::string ns;
  for (const Manifest& m : all) {
    if (m.kind() == "Namespace") ns = m.name();
  }
  if (ns.empty()) errors.push_back("no Namespace");
  if (kustomization.value("namespace", "") != ns) {
    errors.push_back("kustomization.yaml: namespace is not the Namespace's name " + ns);
  }
  for (const Manifest& m : all) {
    if (m.kind() != "Namespace" && m.object.value("/metadata/namespace"_json_pointer, "") != ns) {
      errors.push_back(m.Where() + ": not in the namespace " + ns);
    }
    if (IsWorkload(m)) {
      CheckResources(m, &errors);
      CheckExpansions(m, &errors);
      CheckPaths(m, &errors);
      CheckSecretKeys(all, m, &errors);
      CheckDaemon(m, &errors);
      CheckWorker(all, m, &errors);
      if (!Selects(m.object.value("/spec/selector/matchLabels"_json_pointer, json()),
                   m.object.value("/spec/template/metadata/labels"_json_pointer, json()))) {
        errors.push_back(m.Where() + ": spec.selector does not select its own pod template");
      }
    }
    if (m.kind() == "Service") CheckService(all, m, &errors);
    if (m.kind() == "Secret") CheckSecretPlaceholders(m, &errors);
  }
  // kustomization.yaml lists every manifest but itself and the placeholder Secret.
  std::vector<std::string> expected;
  for (const std::string& f : files) {
    if (f != "kustomization.yaml" && f != kSecretFile) expected.push_back(f);
  }
  std::vector<std::string> listed;
  for (const json& r : kustomization.value("resources", json::array())) {
    listed.push_back(r.get<std::string>());
  }
  std::sort(listed.begin(), listed.end());
  if (listed != expected) {
    errors.push_back("kustomization.yaml: resources are " + json(listed).dump() + ", expected " +
                     json(expected).dump());
  }
  return errors;
}

class K8sManifestsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::is_directory(kManifestDir)) << kManifestDir << " is part of the repository";
    files_ = ManifestFiles();
    manifests_ = LoadManifests();
    kustomization_ = LoadKustomization();
  }

  Manifest& Get(const std::string& kind, const std::string& name) {
    for (Manifest& m : manifests_) {
      if (m.kind() == kind && m.name() == name) return m;
    }
    ADD_FAILURE() << "no " << kind << "/" << name;
    static Manifest none;
    return none;
  }

  std::vector<std::string> Semantics() const {
    return CheckSemantics(manifests_, kustomization_, files_);
  }

  std::vector<std::string> files_;
  std::vector<Manifest> manifests_;
  json kustomization_;
};

// --- The committed manifests ------------------------------------------------------------------

TEST_F(K8sManifestsTest, EveryManifestConformsToItsKubernetesSchema) {
  std::multiset<std::string> kinds;
  for (const Manifest& m : manifests_) {
    kinds.insert(m.kind());
    const std::vector<std::string> errors = Schemas().Validate(m.object);
    EXPECT_TRUE(errors.empty()) << m.Where() << ":" << Lines(errors);
  }
  // Two DaemonSets (the CPU and the GPU worker), two Services (one address, and every replica).
  EXPECT_EQ(kinds, (std::multiset<std::string>{"DaemonSet", "DaemonSet", "Deployment", "Namespace",
                                               "Secret", "Service", "Service"}));
}

TEST_F(K8sManifestsTest, KustomizationIsAKustomization) {
  EXPECT_EQ(kustomization_.value("apiVersion", ""), "kustomize.config.k8s.io/v1beta1");
  EXPECT_EQ(kustomization_.value("kind", ""), "Kustomization");
  for (const auto& [key, value] : kustomization_.items()) {
    EXPECT_TRUE(key == "apiVersion" || key == "kind" || key == "namespace" || key == "resources")
        << "kustomization.yaml: unexpected field " << key;
  }
}

TEST_F(K8sManifestsTest, ObjectsAgreeWithEachOther) {
  const std::vector<std::string> errors = Semantics();
  EXPECT_TRUE(errors.empty()) << Lines(errors);
}

TEST_F(K8sManifestsTest, DaemonProbesAndStoreAreWhatTheDocsSay) {
  const Manifest& daemon = Get("Deployment", "mltuned");
  const json container = PodSpec(daemon)["containers"][0];
  const std::vector<std::string> argv = Argv(container);
  EXPECT_EQ(Flag(argv, "--listen"), "0.0.0.0:8470");
  EXPECT_EQ(Flag(argv, "--store"), "$(MLTUNE_STORE)");
  EXPECT_FALSE(Flag(argv, "--insecure").has_value());
  EXPECT_TRUE(Flag(argv, "--tls-cert").has_value() && Flag(argv, "--tokens").has_value());
  for (const char* probe : {"startupProbe", "readinessProbe", "livenessProbe"}) {
    std::vector<std::string> command;
    for (const json& a : container[probe]["exec"]["command"]) command.push_back(a);
    ASSERT_GE(command.size(), 2u) << probe;
    EXPECT_EQ(command[0], "mltune") << probe;
    EXPECT_EQ(command[1], "workers") << probe;  // ListWorkers: answered from memory
  }
}

// --- The validator rejects what Kubernetes would ----------------------------------------------

constexpr char kDeployment[] = R"(
apiVersion: apps/v1
kind: Deployment
metadata:
  name: example
  labels:
    app.kubernetes.io/name: example
spec:
  replicas: 2
  selector:
    matchLabels:
      app.kubernetes.io/name: example
  template:
    metadata:
      labels:
        app.kubernetes.io/name: example
    spec:
      containers:
        - name: main
          image: example:1.0
          env:
            - name: MODE
              value: "on"
          ports:
            - containerPort: 8470
          resources:
            limits:
              cpu: "2"
              nvidia.com/gpu: 1
)";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(K8sSchemaTest, ValidDeploymentPasses) {
  const std::vector<std::string> errors = ValidateYaml(kDeployment);
  EXPECT_TRUE(errors.empty()) << Lines(errors);
}

TEST(K8sSchemaTest, MisspelledFieldIsNamedByItsPath) {
  const std::vector<std::string> errors =
      ValidateYaml(Replace(kDeployment, "      containers:", "      contaners:"));
  EXPECT_EQ(errors,
            (std::vector<std::string>{R"(spec.template.spec: missing required field "containers")",
                                      "spec.template.spec.contaners: unknown field"}));
}

TEST(K8sSchemaTest, WrongTypeIsNamed) {
  EXPECT_EQ(
      ValidateYaml(Replace(kDeployment, "replicas: 2", "replicas: two")),
      (std::vector<std::string>{R"(spec.replicas: expected integer or null, got string "two")"}));
  // YAML 1.1, as kubectl reads it: an unquoted on is a boolean where a string belongs.
  EXPECT_EQ(ValidateYaml(Replace(kDeployment, R"(value: "on")", "value: on")),
            (std::vector<std::string>{
                "spec.template.spec.containers[0].env[0].value: expected string or null, got "
                "boolean true"}));
  EXPECT_EQ(ValidateYaml(Replace(kDeployment, "replicas: 2", "replicas: 4294967296")),
            (std::vector<std::string>{"spec.replicas: 4294967296 is out of int32 range"}));
}

TEST(K8sSchemaTest, MissingRequiredFieldIsNamed) {
  EXPECT_EQ(ValidateYaml(Replace(kDeployment, "- name: main\n          image", "- image")),
            (std::vector<std::string>{
                R"(spec.template.spec.containers[0]: missing required field "name")"}));
  EXPECT_EQ(ValidateYaml(Replace(kDeployment, "            - containerPort: 8470",
                                 "            - protocol: TCP")),
            (std::vector<std::string>{"spec.template.spec.containers[0].ports[0]: missing "
                                      R"(required field "containerPort")"}));
}

TEST(K8sSchemaTest, QuantitiesAndIntOrStringTakeEitherForm) {
  // A Quantity is a string or a number; not a boolean.
  EXPECT_EQ(ValidateYaml(Replace(kDeployment, R"(cpu: "2")", "cpu: true")),
            (std::vector<std::string>{
                "spec.template.spec.containers[0].resources.limits.cpu: matches no alternative "
                "(expected string or null, got boolean true; expected number or null, got boolean "
                "true)"}));
  const std::string service = R"(
apiVersion: v1
kind: Service
metadata: {name: s}
spec:
  selector: {app: a}
  ports:
    - {name: grpc, port: 8470, targetPort: grpc}
    - {name: other, port: 8471, targetPort: 8471}
)";
  EXPECT_TRUE(ValidateYaml(service).empty()) << Lines(ValidateYaml(service));
  EXPECT_EQ(ValidateYaml(Replace(service, "targetPort: grpc", "targetPort: [grpc]")),
            (std::vector<std::string>{
                "spec.ports[0].targetPort: matches no alternative (expected string or null, got "
                "array a list; expected integer or null, got array a list)"}));
  // Keys that are not plain words are quoted in the path.
  EXPECT_EQ(ValidateYaml(Replace(kDeployment, "nvidia.com/gpu: 1", "nvidia.com/gpu: {n: 1}")),
            (std::vector<std::string>{
                "spec.template.spec.containers[0].resources.limits[\"nvidia.com/gpu\"]: matches "
                "no alternative (expected string or null, got object a mapping; expected number "
                "or null, got object a mapping)"}));
}

TEST(K8sSchemaTest, UnknownKindAndApiVersionAreRefused) {
  EXPECT_EQ(ValidateYaml(Replace(kDeployment, "apps/v1", "extensions/v1beta1")),
            (std::vector<std::string>{"(top level): no schema for apiVersion extensions/v1beta1 "
                                      "kind Deployment (deployment-extensions-v1beta1.json)"}));
  EXPECT_EQ(ValidateYaml("kind: Deployment\n"),
            (std::vector<std::string>{"(top level): apiVersion and kind must be strings"}));
  EXPECT_EQ(ValidateYaml("- a\n"),
            (std::vector<std::string>{"(top level): expected a mapping, got a list"}));
}

TEST(K8sSchemaTest, SecretDataMustBeBase64) {
  const std::string secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata:\n";
  EXPECT_TRUE(ValidateYaml(secret + "  a: aGVsbG8=\n").empty());
  EXPECT_EQ(ValidateYaml(secret + "  a: hello!\n"),
            (std::vector<std::string>{"data.a: not base64 (format byte)"}));
}

TEST(K8sSchemaTest, EveryDocumentOfAStreamIsChecked) {
  EXPECT_EQ(ValidateYaml(std::string(kDeployment) + "---\n# nothing\n---\n" +
                         Replace(kDeployment, "  replicas: 2", "  replica: 2")),
            (std::vector<std::string>{"spec.replica: unknown field"}));
}

TEST(K8sSchemaTest, SchemaNames) {
  EXPECT_EQ(SchemaSet::SchemaName("apps/v1", "DaemonSet"), "daemonset-apps-v1");
  EXPECT_EQ(SchemaSet::SchemaName("v1", "Secret"), "secret-v1");
  EXPECT_EQ(SchemaSet::SchemaName("networking.k8s.io/v1", "NetworkPolicy"),
            "networkpolicy-networking-v1");
}

// --- The YAML reader reads as kubectl does ----------------------------------------------------

json ParseOne(const std::string& text) {
  std::vector<json> documents;
  std::string error;
  EXPECT_TRUE(ParseYamlStream(text, &documents, &error)) << error;
  return documents.size() == 1 ? documents[0] : json();
}

TEST(K8sYamlTest, PlainScalarsResolveAsYaml11) {
  const json v = ParseOne(R"(
octal: 0440
hex: 0x1F
underscores: 1_000
negative: -12
big: 18446744073709551615
float: 1.5
exponent: 1e3
yes: yes
off: off
tilde: ~
empty:
quoted: "0440"
single: 'on'
version: 1.29.0
block: |
  text
)");
  EXPECT_EQ(v["octal"], 288);
  EXPECT_EQ(v["hex"], 31);
  EXPECT_EQ(v["underscores"], 1000);
  EXPECT_EQ(v["negative"], -12);
  EXPECT_TRUE(v["big"].is_number_unsigned());
  EXPECT_EQ(v["float"], 1.5);
  EXPECT_EQ(v["exponent"], 1000.0);
  EXPECT_EQ(v["yes"], true);
  EXPECT_EQ(v["off"], false);
  EXPECT_TRUE(v["tilde"].is_null());
  EXPECT_TRUE(v["empty"].is_null());
  EXPECT_EQ(v["quoted"], "0440");
  EXPECT_EQ(v["single"], "on");
  EXPECT_EQ(v["version"], "1.29.0");
  EXPECT_EQ(v["block"], "text\n");
  EXPECT_EQ(ParseOne("a: !!str 12\nb: !!float 2\n"), json::parse(R"({"a": "12", "b": 2.0})"));
}

TEST(K8sYamlTest, RefusesWhatItCannotReadFaithfully) {
  std::vector<json> documents;
  std::string error;
  EXPECT_FALSE(ParseYamlStream("a: 1\na: 2\n", &documents, &error));
  EXPECT_EQ(error, "2:1: duplicate key \"a\"");
  EXPECT_FALSE(ParseYamlStream("a: &x {b: 1}\nc: *x\n", &documents, &error));
  EXPECT_TRUE(Contains(error, "aliases"));
  EXPECT_FALSE(ParseYamlStream("a: !!int twelve\n", &documents, &error));
  EXPECT_EQ(error, "1:4: \"twelve\" is no valid !!int");
  EXPECT_FALSE(ParseYamlStream("a: [1, 2\nb: 3\n", &documents, &error));
  EXPECT_TRUE(Contains(error, "2:"));  // libyaml's problem and where it found it
}

// --- The cross-object checks fail where they should -------------------------------------------

TEST_F(K8sManifestsTest, ServiceSelectingNothingIsCaught) {
  Get("Service", "mltuned").object["spec"]["selector"]["app.kubernetes.io/component"] = "demon";
  EXPECT_TRUE(Contains(Lines(Semantics()), "matches no workload's pod labels"));
}

TEST_F(K8sManifestsTest, MissingSecretKeyIsCaught) {
  Get("Secret", "mltune").object["stringData"].erase("probe-token");
  EXPECT_TRUE(
      Contains(Lines(Semantics()),
               "reads the key \"probe-token\" of the Secret mltune, which has no such key"));
}

TEST_F(K8sManifestsTest, MissingProbeOrResourcesAreCaught) {
  json& daemon = Get("Deployment", "mltuned").object["spec"]["template"]["spec"];
  daemon["containers"][0].erase("livenessProbe");
  daemon["terminationGracePeriodSeconds"] = 5;
  Get("DaemonSet", "mltune-worker-gpu")
      .object["spec"]["template"]["spec"]["containers"][0]["resources"]
      .erase("limits");
  const std::string errors = Lines(Semantics());
  EXPECT_TRUE(Contains(errors, "mltuned has no livenessProbe"));
  EXPECT_TRUE(Contains(errors, "terminationGracePeriodSeconds 5 does not outlast"));
  EXPECT_TRUE(Contains(errors, "container worker: no /resources/limits/memory"));
  EXPECT_TRUE(Contains(errors, "limits nvidia.com/gpu is not 1"));
}

TEST_F(K8sManifestsTest, UnmountedFileAndUndefinedVariableAreCaught) {
  json& daemon = Get("Deployment", "mltuned").object["spec"]["template"]["spec"];
  daemon["volumes"][0]["secret"]["items"][2]["path"] = "tls/ca.pem";
  json& env = daemon["containers"][0]["env"];
  env.erase(env.begin());  // MLTUNE_STORE
  const std::string errors = Lines(Semantics());
  EXPECT_TRUE(Contains(errors, "--ca=/etc/mltune/tls/ca.crt is no item of the Secret volume"));
  EXPECT_TRUE(Contains(errors, "names $(MLTUNE_STORE), which the container's env does not"));
}

TEST_F(K8sManifestsTest, RealLookingSecretOrUnlistedFileIsCaught) {
  Get("Secret", "mltune").object["stringData"]["tls.key"] = "-----BEGIN PRIVATE KEY-----";
  kustomization_["resources"].push_back(kSecretFile);
  const std::string errors = Lines(Semantics());
  EXPECT_TRUE(Contains(errors, "stringData.tls.key is not a REPLACE-ME placeholder"));
  EXPECT_TRUE(Contains(errors, "kustomization.yaml: resources are"));
}

TEST_F(K8sManifestsTest, WorkerDialingNoServiceIsCaught) {
  json& args = Get("DaemonSet", "mltune-worker-gpu")
                   .object["spec"]["template"]["spec"]["containers"][0]["args"];
  args[0] = "--server=mltuned.default.svc:8470";
  EXPECT_TRUE(Contains(Lines(Semantics()),
                       "--server mltuned.default.svc:8470 is no Service's name and port"));
}

}  // namespace
}  // namespace mltune::testing::k8s
