#include <utility>

#include "daemon/task.h"

namespace mltune::daemon {

const TaskRegistry& TaskRegistry::Global() {
  static const TaskRegistry* registry = [] {
    auto* r = new TaskRegistry;
    r->Register(MakePassOrderTask());
    r->Register(MakeTileTask());
    r->Register(MakeFusionTask());
    r->Register(MakeMcmPartitionTask());
    r->Register(MakePlacementTask());
    r->Register(MakeXlaOptionsTask());
    return r;
  }();
  return *registry;
}

void TaskRegistry::Register(std::unique_ptr<Task> task) {
  std::string name(task->name());
  tasks_[name] = std::move(task);
}

const Task* TaskRegistry::Find(std::string_view name) const {
  auto it = tasks_.find(name);
  return it == tasks_.end() ? nullptr : it->second.get();
}

std::vector<const Task*> TaskRegistry::All() const {
  std::vector<const Task*> all;
  for (const auto& [name, task] : tasks_) all.push_back(task.get());
  return all;
}

}  // namespace mltune::daemon
