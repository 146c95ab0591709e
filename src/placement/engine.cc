#include "placement/engine.h"
