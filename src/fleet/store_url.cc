#include "fleet/store_url.h"

#include <cstdlib>

#include "common/error.h"
#include "fleet/fleet_store.h"

namespace accel::fleet {

namespace {

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// postgresql://user:secret@host/db -> postgresql://user:***@host/db
std::string RedactPassword(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t start = scheme + 3;
  const size_t at = url.find('@', start);
  const size_t slash = url.find('/', start);
  if (at == std::string::npos || (slash != std::string::npos && slash < at)) return url;
  const size_t colon = url.find(':', start);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon + 1) + "***" + url.substr(at);
}

}  // namespace

StoreUrl ParseStoreUrl(const std::string& url, const std::string& where) {
  StoreUrl out;
  out.display = RedactPassword(url);
  if (StartsWith(url, "postgresql://") || StartsWith(url, "postgres://")) {
    out.engine = StoreUrl::kPostgres;
    out.target = url;
    return out;
  }
  std::string path;
  if (StartsWith(url, "sqlite://")) path = url.substr(9);
  else if (StartsWith(url, "sqlite:")) path = url.substr(7);
  else if (url.find("://") == std::string::npos && (EndsWith(url, ".db") || EndsWith(url, ".sqlite")))
    path = url;
  if (path.empty()) {
    throw InputError(where, "", "'" + out.display + "' is not a store URL",
                     "use sqlite:PATH (e.g. sqlite:/var/lib/accel/state.db) or "
                     "postgresql://USER@HOST/DB (libpq URI)");
  }
  out.engine = StoreUrl::kSqlite;
  out.target = path;
  out.display = path;  // messages name the file, as people know it
  return out;
}

std::string DefaultStoreUrl() {
  if (const char* env = std::getenv("ACCEL_FLEET_STORE"); env && *env) return env;
  return "sqlite:" + DefaultStatePath();
}

}  // namespace accel::fleet
