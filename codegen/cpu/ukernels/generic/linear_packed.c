/* kiln micro-kernels, portable C: linear over the repacked formats (q4_0, q4_1 and q8_0 in
 * 16- or 32-row groups; layout in kiln/quant_packed.h), so every target can run them.
 *
 * x is quantised to int8 blocks and the product is packed_generic_groups (both in
 * packed_common.h); the x86, NEON and HVX files do the same arithmetic with vector
 * instructions. Tasks split the row groups, so results do not depend on the thread count.
 */
#include "packed_common.h"
#include "ukernel_abi.h"

#define packed_groups packed_generic_groups

#include "linear_packed_entry.h"
