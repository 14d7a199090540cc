// SPDX-License-Identifier: GPL-2.0
//
// What the RC-over-iWARP profile does not have, with the answer the
// document gives for a missing feature: the UD service (endpoints, address
// handles, service requests, datagram posts), atomics (iWARP has none), and
// RDMA Read into an RMR (rdma_read_local_extensions is false).
#include "internal.hpp"

using namespace itapi;

extern "C" {

it_status_t it_ep_ud_create(it_pz_handle_t pz_handle, it_evd_handle_t, it_evd_handle_t,
                            const it_ep_attributes_t *, size_t, it_ep_handle_t *) {
    return lookup<Pz>(pz_handle) == nullptr ? IT_ERR_INVALID_PZ : IT_ERR_OP_NOT_SUPPORTED;
}

it_status_t it_address_handle_create(it_pz_handle_t pz_handle, const it_path_t *, it_ah_flags_t,
                                     it_addr_handle_t *) {
    return lookup<Pz>(pz_handle) == nullptr ? IT_ERR_INVALID_PZ : IT_ERR_OP_NOT_SUPPORTED;
}

// No address handle can exist, so every one is invalid.
it_status_t it_address_handle_free(it_addr_handle_t) {
    return IT_ERR_INVALID_AH;
}

it_status_t it_address_handle_modify(it_addr_handle_t, it_addr_param_mask_t,
                                     const it_addr_param_t *) {
    return IT_ERR_INVALID_AH;
}

it_status_t it_address_handle_query(it_addr_handle_t, it_addr_param_mask_t, it_addr_param_t *) {
    return IT_ERR_INVALID_AH;
}

it_status_t it_ud_service_request_handle_create(const it_conn_qual_t *, it_evd_handle_t,
                                                const it_path_t *, const unsigned char *, size_t,
                                                it_ud_svc_req_handle_t *) {
    return IT_ERR_OP_NOT_SUPPORTED;
}

it_status_t it_ud_service_request_handle_free(it_ud_svc_req_handle_t) {
    return IT_ERR_INVALID_UD_SVC;
}

it_status_t it_ud_service_request_handle_query(it_ud_svc_req_handle_t, it_ud_svc_req_param_mask_t,
                                               it_ud_svc_req_param_t *) {
    return IT_ERR_INVALID_UD_SVC;
}

it_status_t it_ud_service_request(it_ud_svc_req_handle_t) {
    return IT_ERR_INVALID_UD_SVC;
}

it_status_t it_ud_service_reply(it_ud_svc_req_identifier_t, it_ud_svc_req_status_t,
                                it_remote_ep_info_t, const unsigned char *, size_t) {
    return IT_ERR_INVALID_UD_SVC_REQ_ID;
}

it_status_t it_post_sendto(it_ep_handle_t ep_handle, const it_lmr_triplet_t *, size_t,
                           it_dto_cookie_t, it_dto_flags_t, const it_dg_remote_ep_addr_t *) {
    // every EP is RC: a datagram post is for another service type
    return lookup<Ep>(ep_handle) == nullptr ? IT_ERR_INVALID_EP : IT_ERR_INVALID_EP_TYPE;
}

it_status_t it_post_recvfrom(it_ep_handle_t ep_handle, const it_lmr_triplet_t *, size_t,
                             it_dto_cookie_t, it_dto_flags_t) {
    return lookup<Ep>(ep_handle) == nullptr ? IT_ERR_INVALID_EP : IT_ERR_INVALID_EP_TYPE;
}

it_status_t it_post_atomic(it_ep_handle_t ep_handle, it_atomic_op_t, uint64_t, uint64_t,
                           const it_lmr_triplet_t *, it_dto_cookie_t, it_dto_flags_t,
                           it_rdma_addr_t, it_rmr_context_t) {
    return lookup<Ep>(ep_handle) == nullptr ? IT_ERR_INVALID_EP : IT_ERR_OP_NOT_SUPPORTED;
}

it_status_t it_post_rdma_read_to_rmr(it_ep_handle_t ep_handle, const it_rmr_triplet_t *, size_t,
                                     it_dto_cookie_t, it_dto_flags_t, it_rdma_addr_t,
                                     it_rmr_context_t) {
    return lookup<Ep>(ep_handle) == nullptr ? IT_ERR_INVALID_EP : IT_ERR_OP_NOT_SUPPORTED;
}

} // extern "C"
