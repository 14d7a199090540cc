// SPDX-License-Identifier: GPL-2.0
/* <vipl.h> from C: the descriptor layout the guide fixes, byte for byte. */
#include <stddef.h>
#include <vipl.h>

_Static_assert(sizeof(VIP_CONTROL_SEGMENT) == 32, "control segment");
_Static_assert(offsetof(VIP_CONTROL_SEGMENT, NextHandle) == 8, "NextHandle");
_Static_assert(offsetof(VIP_CONTROL_SEGMENT, SegCount) == 12, "SegCount");
_Static_assert(offsetof(VIP_CONTROL_SEGMENT, Control) == 14, "Control");
_Static_assert(offsetof(VIP_CONTROL_SEGMENT, Reserved) == 16, "Reserved");
_Static_assert(offsetof(VIP_CONTROL_SEGMENT, ImmediateData) == 20, "ImmediateData");
_Static_assert(offsetof(VIP_CONTROL_SEGMENT, Length) == 24, "Length");
_Static_assert(offsetof(VIP_CONTROL_SEGMENT, Status) == 28, "Status");
_Static_assert(sizeof(VIP_ADDRESS_SEGMENT) == 16, "address segment");
_Static_assert(sizeof(VIP_DATA_SEGMENT) == 16, "data segment");
_Static_assert(offsetof(VIP_DATA_SEGMENT, Length) == 12, "data segment Length");
_Static_assert(sizeof(VIP_DESCRIPTOR) == 64, "descriptor with two segments");

VIP_RETURN vipl_header_c_check(void);
VIP_RETURN vipl_header_c_check(void)
{
	VIP_ULONG t = VIP_INFINITE;
	return t == ~(VIP_ULONG)0 ? VIP_SUCCESS : VIP_INVALID_PARAMETER;
}
