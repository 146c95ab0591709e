#include "dra/inventory.h"

namespace accel::dra {

const DraDevice* Inventory::Find(const std::string& name) const {
  for (const DraDevice& d : devices)
    if (d.name == name) return &d;
  return nullptr;
}

}  // namespace accel::dra
