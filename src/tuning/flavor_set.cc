#include "tuning/flavor_set.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

#include "common/error.h"

namespace accel::tuning {

namespace {

namespace fs = std::filesystem;

bool IsAliasFile(const fs::path& p) { return p.filename().string().rfind("aliases", 0) == 0; }

bool IsFlavorExtension(const fs::path& p) {
  std::string ext = p.extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

}  // namespace

FlavorSet LoadFlavorSet(const std::string& flavors_path, const std::string& aliases_path) {
  FlavorSet set;
  if (!aliases_path.empty()) set.aliases = placement::LoadPciAliases(aliases_path);
  std::error_code ec;
  if (!fs::is_directory(flavors_path, ec)) {
    set.flavors = placement::LoadFlavors(flavors_path);
    return set;
  }
  std::vector<fs::path> files;
  for (fs::directory_iterator it(flavors_path, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file() && IsFlavorExtension(it->path())) files.push_back(it->path());
  if (ec) throw InputError(flavors_path, "", "cannot list the directory: " + ec.message());
  std::sort(files.begin(), files.end());
  bool have_aliases = !aliases_path.empty();
  std::set<std::string> names;
  for (const fs::path& p : files) {
    if (IsAliasFile(p)) {
      if (!have_aliases) set.aliases = placement::LoadPciAliases(p.string());
      have_aliases = true;
      continue;
    }
    for (placement::Flavor& f : placement::LoadFlavors(p.string())) {
      if (!names.insert(f.name).second)
        throw InputError(p.string(), "name",
                         "flavor \"" + f.name + "\" is defined twice in " + flavors_path,
                         "give every flavor its own name");
      set.flavors.push_back(std::move(f));
    }
  }
  if (set.flavors.empty())
    throw InputError(flavors_path, "", "holds no flavor files (*.yaml, *.yml, *.json)");
  return set;
}

}  // namespace accel::tuning
