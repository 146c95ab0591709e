#include "topology/host.h"
