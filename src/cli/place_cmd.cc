#include "cli/commands.h"

namespace accel::cli {
void RegisterPlace(CLI::App& app, int* exit_code) {}  // TODO: being written
}  // namespace accel::cli
