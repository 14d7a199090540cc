// SPDX-License-Identifier: GPL-2.0
/* <it_api.h> from C11 with -Wpedantic: the document's values and layouts. */
#include <it_api.h>
#include <stddef.h>

_Static_assert(IT_SUCCESS == 0, "IT_SUCCESS");
_Static_assert(IT_ERR_WAITER_LIMIT + 1 == IT_ERR_EP_TIMEWAIT, "added codes at the end");
_Static_assert(IT_EVENT_STREAM_MASK == 0xff000, "stream mask");
_Static_assert(IT_CM_MSG_CONN_BROKEN_EVENT == 0x02006, "CONN_BROKEN");
_Static_assert(IT_ASYNC_AFF_SRQ_LOW_WATERMARK == 0x04100, "SRQ_LOW_WATERMARK");
_Static_assert(IT_ASYNC_AFF_EP_L_LLQ_ERROR == IT_ASYNC_AFF_EP_L_LLP_ERROR, "LLQ alias");
_Static_assert(IT_LMR_FLAG_NONE == 0, "no flag");
_Static_assert(IT_MAX_PRIV_DATA == 256, "private data");
_Static_assert(sizeof(it_rmr_context_t) == 4, "rmr_context");
_Static_assert(sizeof(it_rdma_addr_t) == 8, "rdma_addr");
_Static_assert(offsetof(it_dto_cmpl_event_t, event_number) == 0, "event_number first");
_Static_assert(offsetof(it_conn_request_event_t, event_number) == 0, "event_number first");

it_status_t itapi_header_c_check(void);
it_status_t itapi_header_c_check(void)
{
	it_event_t ev;
	it_ia_info_t info;
	it_evd_param_t p;
	ev.event_number = IT_SOFTWARE_EVENT;
	info.iobl_types_supported = IT_IOBL_PAGE_LIST;
	p.sevd_queue_size = 1;
	p.sevd_threshold = IT_THRESHOLD_DISABLE;
	(void)info;
	(void)p;
	return ev.event_number == IT_SOFTWARE_EVENT ? IT_SUCCESS : IT_ERR_INVALID_HANDLE;
}
