#include "telemetry/render_profile.h"

#include <set>

#include "common/error.h"
#include "common/strings.h"

namespace accel::telemetry {

RenderOptions RenderOptionsForProfile(const std::string& profile, const std::string& where,
                                      const std::string& field) {
  static const std::set<std::string> kKnown = {"auto", "none", "dcgm", "amd", "gaudi"};
  std::set<std::string> profiles;
  for (const std::string& item : SplitList(profile)) {
    if (!kKnown.count(item)) {
      throw InputError(where, field, "unknown profile '" + item + "'",
                       "use auto, none, or a comma list of dcgm, amd, gaudi");
    }
    profiles.insert(item);
  }
  RenderOptions r;
  bool automatic = profiles.empty() || profiles.count("auto");
  r.dcgm = automatic || profiles.count("dcgm");
  r.amd = automatic || profiles.count("amd");
  r.gaudi = automatic || profiles.count("gaudi");
  if (profiles.count("none")) r.dcgm = r.amd = r.gaudi = false;
  return r;
}

}  // namespace accel::telemetry
