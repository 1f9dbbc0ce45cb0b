/* SPDX-License-Identifier: BSD-3-Clause */
/* errstr.c - names of return codes, failure kinds, event kinds and message
 * types, each generated from one X-macro table. */
#include "p3.h"

#include "nal.h"

#define P3_RC_TABLE(X)                                                                           \
	X(PTL_OK)                                                                                \
	X(PTL_AC_INDEX_INVALID)                                                                  \
	X(PTL_EQ_DROPPED)                                                                        \
	X(PTL_EQ_EMPTY)                                                                          \
	X(PTL_EQ_INVALID)                                                                        \
	X(PTL_FAIL)                                                                              \
	X(PTL_HANDLE_INVALID)                                                                    \
	X(PTL_IFACE_INVALID)                                                                     \
	X(PTL_MD_ILLEGAL)                                                                        \
	X(PTL_MD_INVALID)                                                                        \
	X(PTL_MD_IN_USE)                                                                         \
	X(PTL_MD_NO_UPDATE)                                                                      \
	X(PTL_ME_INVALID)                                                                        \
	X(PTL_ME_IN_USE)                                                                         \
	X(PTL_ME_LIST_TOO_LONG)                                                                  \
	X(PTL_NI_INVALID)                                                                        \
	X(PTL_NO_INIT)                                                                           \
	X(PTL_NO_SPACE)                                                                          \
	X(PTL_PID_INVALID)                                                                       \
	X(PTL_PROCESS_INVALID)                                                                   \
	X(PTL_PT_FULL)                                                                           \
	X(PTL_PT_INDEX_INVALID)                                                                  \
	X(PTL_SEGV)                                                                              \
	X(PTL_SR_INDEX_INVALID)                                                                  \
	X(PTL_IFACE_DUP)

#define P3_RC_NAME(name) [name] = #name,
const char *ptl_err_str[PTL_MAX_ERRNO + 1] = {P3_RC_TABLE(P3_RC_NAME)[PTL_MAX_ERRNO] =
							 "PTL_MAX_ERRNO"};
#undef P3_RC_NAME

const char *PtlErrorStr(unsigned int ptl_errno)
{
	if (ptl_errno >= PTL_MAX_ERRNO || !ptl_err_str[ptl_errno])
		return "PTL_UNKNOWN_ERROR";
	return ptl_err_str[ptl_errno];
}

#define P3_EV_TABLE(X)                                                                           \
	X(PTL_EVENT_GET_START)                                                                   \
	X(PTL_EVENT_GET_END)                                                                     \
	X(PTL_EVENT_PUT_START)                                                                   \
	X(PTL_EVENT_PUT_END)                                                                     \
	X(PTL_EVENT_GETPUT_START)                                                                \
	X(PTL_EVENT_GETPUT_END)                                                                  \
	X(PTL_EVENT_REPLY_START)                                                                 \
	X(PTL_EVENT_REPLY_END)                                                                   \
	X(PTL_EVENT_SEND_START)                                                                  \
	X(PTL_EVENT_SEND_END)                                                                    \
	X(PTL_EVENT_ACK)                                                                         \
	X(PTL_EVENT_UNLINK)

#define P3_EV_NAME(name) [name] = #name,
static const char *const p3_event_names[PTL_EVENT_KIND_MAX] = {P3_EV_TABLE(P3_EV_NAME)};
#undef P3_EV_NAME

const char *PtlEventKindStr(ptl_event_kind_t kind)
{
	if ((unsigned int)kind >= PTL_EVENT_KIND_MAX)
		return "PTL_EVENT_UNKNOWN";
	return p3_event_names[kind];
}

#define P3_FAIL_TABLE(X)                                                                         \
	X(PTL_NI_OK)                                                                             \
	X(PTL_NI_FAIL)                                                                           \
	X(PTL_NI_PEER_DEAD)                                                                      \
	X(PTL_NI_PEER_RESTARTED)                                                                 \
	X(PTL_NI_DROPPED)                                                                        \
	X(PTL_NI_UNLINKED)                                                                       \
	X(PTL_NI_POST_REFUSED)

#define P3_FAIL_NAME(name) [name] = #name,
static const char *const p3_fail_names[] = {P3_FAIL_TABLE(P3_FAIL_NAME)};
#undef P3_FAIL_NAME

const char *PtlNIFailStr(ptl_handle_ni_t ni, ptl_ni_fail_t fail_type)
{
	(void)ni;
	if (fail_type >= sizeof(p3_fail_names) / sizeof(p3_fail_names[0]))
		return "PTL_NI_UNKNOWN_FAILURE";
	return p3_fail_names[fail_type];
}

#define P3_MSG_TYPE_NAME(name, value) [value] = #name,
static const char *const p3_msg_type_names[] = {P3_MSG_TYPES(P3_MSG_TYPE_NAME)};
#undef P3_MSG_TYPE_NAME

const char *p3_msg_type_name(unsigned int type)
{
	if (type >= sizeof(p3_msg_type_names) / sizeof(p3_msg_type_names[0]) ||
	    !p3_msg_type_names[type])
		return "?";
	return p3_msg_type_names[type];
}
