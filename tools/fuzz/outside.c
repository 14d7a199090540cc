// SPDX-License-Identifier: GPL-2.0
/*
 * terminate.c's vd_term_access_code() maps TPT check results through two
 * tables of tpt.c, which holds the TPT itself and is not built into the
 * fuzz targets. Nothing they run reaches these; if something did, it
 * would stop here rather than get an answer made up for it.
 */
#include "../../kernel/tpt.h"

u16 vd_access_term_ddp(enum vd_access_status status)
{
	abort();
}

u16 vd_access_term_rdmap(enum vd_access_status status)
{
	abort();
}
