/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vipl.h: the VI Provider Library (VIPL) of the Intel VI Architecture
 * Developer's Guide 1.0, on viaduct.
 *
 * Every type, constant, structure, return code and function of the guide's
 * header (section 10.1), under the guide's names, with the errata fixed:
 *  - VIP_CONTROL_RESERVED is 0xFFF0 (bits 15:4), not 0xFFFF0;
 *  - VIP_STATUS_RESERVED is 0xFFF0FE00 (bits 31:20 and 15:9);
 *  - the eighth VIP_ERROR_CODE is VIP_ERROR_RDMAR_PROT (not a second
 *    VIP_ERROR_RDMAW_PROT);
 *  - VIP_CONTROL_OP_SENDRECV is the name (VIP_CONTROL_OP_SENDRXCV is kept as
 *    an alias for programs that used the misspelling);
 *  - VIP_INVALID_RDMA_READ, the text's spelling, is an alias of the enum's
 *    VIP_INVALID_RDMAREAD;
 *  - VIP_AUTODISCOVERY_LIST.ADAddrArray is VIP_NET_ADDRESS ** as section
 *    3.7.6 describes (an array of caller-allocated addresses);
 *  - the fixed-width types are those of <stdint.h>, not NT's __int64.
 * VIP_ULONG stays unsigned long, as programs of the era print and declare it.
 *
 * Link with -lvipl (pkg-config vipl). See vipl(3), Documentation/vipl.rst.
 */
#ifndef _VIPL_
#define _VIPL_ 1

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef IN
#define IN
#endif
#ifndef OUT
#define OUT
#endif

/* Generic types for portability */
typedef void *VIP_PVOID;
typedef int VIP_BOOLEAN;
typedef char VIP_CHAR;
typedef unsigned char VIP_UCHAR;
typedef unsigned short VIP_USHORT;
typedef unsigned long VIP_ULONG;
typedef long VIP_LONG;
typedef short VIP_SHORT;

typedef uint64_t VIP_UINT64;
typedef uint32_t VIP_UINT32;
typedef uint16_t VIP_UINT16;
typedef uint8_t VIP_UINT8;
typedef int64_t VIP_INT64;
typedef int32_t VIP_INT32;
typedef int16_t VIP_INT16;
typedef int8_t VIP_INT8;

typedef VIP_PVOID VIP_QOS; /* details are not defined */

/* Used only by the user and the VIPL library. */
#ifndef VIP_KERNEL
#define VIP_INFINITE (~0UL) /* ~(VIP_ULONG)0 */
#endif

#define VIP_TRUE (1)
#define VIP_FALSE (0)

/* Handles of opaque objects */
typedef VIP_PVOID VIP_NIC_HANDLE;
typedef VIP_PVOID VIP_VI_HANDLE;
typedef VIP_PVOID VIP_PROTECTION_HANDLE;
typedef VIP_PVOID VIP_CONN_HANDLE;
typedef VIP_PVOID VIP_CQ_HANDLE;

/* Handles used by the NIC: on viaduct, the region's STag. */
typedef VIP_UINT32 VIP_MEM_HANDLE;

/* Recommended NIC name: VINIC0 (or VINIC), VINIC1, ... */
#define VINICBASENAME "VINIC"

/*
 * VI network address: HostAddressLen bytes of host address (on viaduct the
 * NIC's IPv4 address, 4 bytes, network order) immediately followed by
 * DiscriminatorLen bytes of discriminator, starting at HostAddress[0].
 */
typedef struct {
    VIP_UINT16 HostAddressLen;
    VIP_UINT16 DiscriminatorLen;
    VIP_UINT8 HostAddress[1];
} VIP_NET_ADDRESS;

typedef VIP_USHORT VIP_RELIABILITY_LEVEL;

#define VIP_SERVICE_UNRELIABLE 0x01
#define VIP_SERVICE_RELIABLE_DELIVERY 0x02
#define VIP_SERVICE_RELIABLE_RECEPTION 0x04

/* Static attributes of a NIC, returned by VipQueryNic. */
typedef struct {
    VIP_CHAR Name[64];
    VIP_ULONG HardwareVersion;
    VIP_ULONG ProviderVersion;
    VIP_UINT16 NicAddressLen;
    const VIP_UINT8 *LocalNicAddress;
    VIP_BOOLEAN ThreadSafe;
    VIP_UINT16 MaxDiscriminatorLen;
    VIP_ULONG MaxRegisterBytes;
    VIP_ULONG MaxRegisterRegions;
    VIP_ULONG MaxRegisterBlockBytes;
    VIP_ULONG MaxVI;
    VIP_ULONG MaxDescriptorsPerQueue;
    VIP_ULONG MaxSegmentsPerDesc;
    VIP_ULONG MaxCQ;
    VIP_ULONG MaxCQEntries;
    VIP_ULONG MaxTransferSize;
    VIP_ULONG NativeMTU;
    VIP_ULONG MaxPtags;
    VIP_RELIABILITY_LEVEL ReliabilityLevelSupport;
    VIP_RELIABILITY_LEVEL RDMAReadSupport;
} VIP_NIC_ATTRIBUTES;

/* Alignment of descriptors, in bytes */
#define VIP_DESCRIPTOR_ALIGNMENT 64

/* An address in registered memory; 64 bits wide on every platform */
typedef union {
    VIP_UINT64 AddressBits;
    VIP_PVOID Address;
} VIP_PVOID64;

/* Control segment: 32 bytes, first in every descriptor */
typedef struct {
    VIP_PVOID64 Next;
    VIP_MEM_HANDLE NextHandle;
    VIP_UINT16 SegCount;
    VIP_UINT16 Control;
    VIP_UINT32 Reserved;
    VIP_UINT32 ImmediateData;
    VIP_UINT32 Length;
    VIP_UINT32 Status;
} VIP_CONTROL_SEGMENT;

/* Address segment (RDMA only): 16 bytes, right after the control segment */
typedef struct {
    VIP_PVOID64 Data;
    VIP_MEM_HANDLE Handle;
    VIP_UINT32 Reserved;
} VIP_ADDRESS_SEGMENT;

/* Data segment: 16 bytes */
typedef struct {
    VIP_PVOID64 Data;
    VIP_MEM_HANDLE Handle;
    VIP_UINT32 Length;
} VIP_DATA_SEGMENT;

typedef union {
    VIP_ADDRESS_SEGMENT Remote;
    VIP_DATA_SEGMENT Local;
} VIP_DESCRIPTOR_SEGMENT;

/*
 * A descriptor: the control segment followed by SegCount contiguous
 * segments. This type, with room for two, is a convenience; longer ones are
 * laid out by the program.
 */
typedef struct _VIP_DESCRIPTOR {
    VIP_CONTROL_SEGMENT CS;
    VIP_DESCRIPTOR_SEGMENT DS[2];
} VIP_DESCRIPTOR;

/* Control field */
#define VIP_CONTROL_OP_SENDRECV 0x0000
#define VIP_CONTROL_OP_SENDRXCV VIP_CONTROL_OP_SENDRECV /* the guide's typo */
#define VIP_CONTROL_OP_RDMAWRITE 0x0001
#define VIP_CONTROL_OP_RDMAREAD 0x0002
#define VIP_CONTROL_OP_RESERVED 0x0003
#define VIP_CONTROL_OP_MASK 0x0003
#define VIP_CONTROL_IMMEDIATE 0x0004
#define VIP_CONTROL_QFENCE 0x0008
#define VIP_CONTROL_RESERVED 0xFFF0

/* Status field */
#define VIP_STATUS_DONE 0x00000001
#define VIP_STATUS_FORMAT_ERROR 0x00000002
#define VIP_STATUS_PROTECTION_ERROR 0x00000004
#define VIP_STATUS_LENGTH_ERROR 0x00000008
#define VIP_STATUS_PARTIAL_ERROR 0x00000010
#define VIP_STATUS_DESC_FLUSHED_ERROR 0x00000020
#define VIP_STATUS_TRANSPORT_ERROR 0x00000040
#define VIP_STATUS_RDMA_PROT_ERROR 0x00000080
#define VIP_STATUS_REMOTE_DESC_ERROR 0x00000100
#define VIP_STATUS_ERROR_MASK 0x000001FE

#define VIP_STATUS_OP_SEND 0x00000000
#define VIP_STATUS_OP_RECEIVE 0x00010000
#define VIP_STATUS_OP_RDMA_WRITE 0x00020000
#define VIP_STATUS_OP_REMOTE_RDMA_WRITE 0x00030000
#define VIP_STATUS_OP_RDMA_READ 0x00040000
#define VIP_STATUS_OP_MASK 0x00070000
#define VIP_STATUS_IMMEDIATE 0x00080000
#define VIP_STATUS_RESERVED 0xFFF0FE00

/* Returned by VipQueryVi */
typedef enum {
    VIP_STATE_IDLE,
    VIP_STATE_CONNECTED,
    VIP_STATE_CONNECT_PENDING,
    VIP_STATE_ERROR
} VIP_VI_STATE;

typedef struct {
    VIP_RELIABILITY_LEVEL ReliabilityLevel;
    VIP_ULONG MaxTransferSize;
    VIP_QOS QoS;
    VIP_PROTECTION_HANDLE Ptag;
    VIP_BOOLEAN EnableRdmaWrite;
    VIP_BOOLEAN EnableRdmaRead;
} VIP_VI_ATTRIBUTES;

typedef struct _VIP_MEM_ATTRIBUTES {
    VIP_PROTECTION_HANDLE Ptag;
    VIP_BOOLEAN EnableRdmaWrite;
    VIP_BOOLEAN EnableRdmaRead;
} VIP_MEM_ATTRIBUTES;

/* Error descriptor: error codes */
typedef enum _VIP_ERROR_CODE {
    VIP_ERROR_POST_DESC,
    VIP_ERROR_CONN_LOST,
    VIP_ERROR_RECVQ_EMPTY,
    VIP_ERROR_VI_OVERRUN,
    VIP_ERROR_RDMAW_PROT,
    VIP_ERROR_RDMAW_DATA,
    VIP_ERROR_RDMAW_ABORT,
    VIP_ERROR_RDMAR_PROT,
    VIP_ERROR_COMP_PROT,
    VIP_ERROR_RDMA_TRANSPORT,
    VIP_ERROR_CATASTROPHIC
} VIP_ERROR_CODE;

/* Error descriptor: resource codes */
typedef enum _VIP_RESOURCE_CODE {
    VIP_RESOURCE_NIC,
    VIP_RESOURCE_VI,
    VIP_RESOURCE_CQ,
    VIP_RESOURCE_DESCRIPTOR
} VIP_RESOURCE_CODE;

/* What an asynchronous error handler receives */
typedef struct _VIP_ERROR_DESCRIPTOR {
    VIP_NIC_HANDLE NicHandle;
    VIP_VI_HANDLE ViHandle;
    VIP_CQ_HANDLE CQHandle;
    VIP_DESCRIPTOR *DescriptorPtr;
    VIP_ULONG OpCode;
    VIP_RESOURCE_CODE ResourceCode;
    VIP_ERROR_CODE ErrorCode;
} VIP_ERROR_DESCRIPTOR;

typedef enum {
    VIP_SUCCESS,
    VIP_NOT_DONE,
    VIP_INVALID_PARAMETER,
    VIP_ERROR_RESOURCE,
    VIP_TIMEOUT,
    VIP_REJECT,
    VIP_INVALID_RELIABILITY_LEVEL,
    VIP_INVALID_MTU,
    VIP_INVALID_QOS,
    VIP_INVALID_PTAG,
    VIP_INVALID_RDMAREAD,
    VIP_DESCRIPTOR_ERROR,
    VIP_INVALID_STATE,
    VIP_ERROR_NAMESERVICE,
    VIP_NO_MATCH,
    VIP_NOT_REACHABLE
} VIP_RETURN;

#define VIP_INVALID_RDMA_READ VIP_INVALID_RDMAREAD /* the text's spelling */

/* InfoType of VipQuerySystemManagementInfo */
#define VIP_SMI_AUTODISCOVERY (1UL) /* (VIP_ULONG)1 */

typedef struct {
    VIP_ULONG NumberOfHops;
    VIP_NET_ADDRESS **ADAddrArray;
    VIP_ULONG NumAdAddrs;
} VIP_AUTODISCOVERY_LIST;

/* Handlers */
typedef void (*VIP_DESCRIPTOR_NOTIFY_HANDLER)(VIP_PVOID Context, VIP_NIC_HANDLE NicHandle,
                                              VIP_VI_HANDLE ViHandle,
                                              VIP_DESCRIPTOR *DescriptorPtr);
typedef void (*VIP_CQ_NOTIFY_HANDLER)(VIP_PVOID Context, VIP_NIC_HANDLE NicHandle,
                                      VIP_VI_HANDLE ViHandle, VIP_BOOLEAN RecvQueue);
typedef void (*VIP_ERROR_HANDLER)(VIP_PVOID Context, VIP_ERROR_DESCRIPTOR *ErrorDesc);

/* Functions (ordinals of vipl.def in brackets) */

/* [1] */ extern VIP_RETURN VipOpenNic(IN const VIP_CHAR *DeviceName,
                                       OUT VIP_NIC_HANDLE *NicHandle);
/* [2] */ extern VIP_RETURN VipCloseNic(IN VIP_NIC_HANDLE NicHandle);
/* [3] */ extern VIP_RETURN VipCreateVi(IN VIP_NIC_HANDLE NicHandle,
                                        IN VIP_VI_ATTRIBUTES *ViAttribs,
                                        IN VIP_CQ_HANDLE SendCQHandle,
                                        IN VIP_CQ_HANDLE RecvCQHandle, OUT VIP_VI_HANDLE *ViHandle);
/* [4] */ extern VIP_RETURN VipDestroyVi(IN VIP_VI_HANDLE ViHandle);
/* [5] */ extern VIP_RETURN VipConnectWait(IN VIP_NIC_HANDLE NicHandle,
                                           IN VIP_NET_ADDRESS *LocalAddr, IN VIP_ULONG Timeout,
                                           OUT VIP_NET_ADDRESS *RemoteAddr,
                                           OUT VIP_VI_ATTRIBUTES *RemoteViAttribs,
                                           OUT VIP_CONN_HANDLE *ConnHandle);
/* [6] */ extern VIP_RETURN VipConnectAccept(IN VIP_CONN_HANDLE ConnHandle,
                                             IN VIP_VI_HANDLE ViHandle);
/* [7] */ extern VIP_RETURN VipConnectReject(IN VIP_CONN_HANDLE ConnHandle);
/* [8] */ extern VIP_RETURN VipConnectRequest(IN VIP_VI_HANDLE ViHandle,
                                              IN VIP_NET_ADDRESS *LocalAddr,
                                              IN VIP_NET_ADDRESS *RemoteAddr, IN VIP_ULONG Timeout,
                                              OUT VIP_VI_ATTRIBUTES *RemoteViAttribs);
/* [9] */ extern VIP_RETURN VipDisconnect(IN VIP_VI_HANDLE ViHandle);
/* [10] */ extern VIP_RETURN VipConnectPeerRequest(IN VIP_VI_HANDLE ViHandle,
                                                   IN VIP_NET_ADDRESS *LocalAddr,
                                                   IN VIP_NET_ADDRESS *RemoteAddr,
                                                   IN VIP_ULONG Timeout);
/* [11] */ extern VIP_RETURN VipConnectPeerDone(IN VIP_VI_HANDLE ViHandle,
                                                OUT VIP_VI_ATTRIBUTES *RemoteViAttribs);
/* [12] */ extern VIP_RETURN VipConnectPeerWait(IN VIP_VI_HANDLE ViHandle,
                                                OUT VIP_VI_ATTRIBUTES *RemoteViAttribs);
/* [13] */ extern VIP_RETURN VipCreatePtag(IN VIP_NIC_HANDLE NicHandle,
                                           OUT VIP_PROTECTION_HANDLE *Ptag);
/* [14] */ extern VIP_RETURN VipDestroyPtag(IN VIP_NIC_HANDLE NicHandle,
                                            IN VIP_PROTECTION_HANDLE Ptag);
/* [15] */ extern VIP_RETURN VipRegisterMem(IN VIP_NIC_HANDLE NicHandle,
                                            IN VIP_PVOID VirtualAddress, IN VIP_ULONG Length,
                                            IN VIP_MEM_ATTRIBUTES *MemAttribs,
                                            OUT VIP_MEM_HANDLE *MemoryHandle);
/* [16] */ extern VIP_RETURN VipDeregisterMem(IN VIP_NIC_HANDLE NicHandle,
                                              IN VIP_PVOID VirtualAddress,
                                              IN VIP_MEM_HANDLE MemoryHandle);
/* [17] */ extern VIP_RETURN VipPostSend(IN VIP_VI_HANDLE ViHandle,
                                         IN VIP_DESCRIPTOR *DescriptorPtr,
                                         IN VIP_MEM_HANDLE MemoryHandle);
/* [18] */ extern VIP_RETURN VipSendDone(IN VIP_VI_HANDLE ViHandle,
                                         OUT VIP_DESCRIPTOR **DescriptorPtr);
/* [19] */ extern VIP_RETURN VipSendWait(IN VIP_VI_HANDLE ViHandle, IN VIP_ULONG Timeout,
                                         OUT VIP_DESCRIPTOR **DescriptorPtr);
/* [20] */ extern VIP_RETURN VipPostRecv(IN VIP_VI_HANDLE ViHandle,
                                         IN VIP_DESCRIPTOR *DescriptorPtr,
                                         IN VIP_MEM_HANDLE MemoryHandle);
/* [21] */ extern VIP_RETURN VipRecvDone(IN VIP_VI_HANDLE ViHandle,
                                         OUT VIP_DESCRIPTOR **DescriptorPtr);
/* [22] */ extern VIP_RETURN VipRecvWait(IN VIP_VI_HANDLE ViHandle, IN VIP_ULONG Timeout,
                                         OUT VIP_DESCRIPTOR **DescriptorPtr);
/* [23] */ extern VIP_RETURN VipCQDone(IN VIP_CQ_HANDLE CQHandle, OUT VIP_VI_HANDLE *ViHandle,
                                       OUT VIP_BOOLEAN *RecvQueue);
/* [24] */ extern VIP_RETURN VipCQWait(IN VIP_CQ_HANDLE CQHandle, IN VIP_ULONG Timeout,
                                       OUT VIP_VI_HANDLE *ViHandle, OUT VIP_BOOLEAN *RecvQueue);
/* [25] */ extern VIP_RETURN VipSendNotify(IN VIP_VI_HANDLE ViHandle, IN VIP_PVOID Context,
                                           IN VIP_DESCRIPTOR_NOTIFY_HANDLER Handler);
/* [26] */ extern VIP_RETURN VipRecvNotify(IN VIP_VI_HANDLE ViHandle, IN VIP_PVOID Context,
                                           IN VIP_DESCRIPTOR_NOTIFY_HANDLER Handler);
/* [27] */ extern VIP_RETURN VipCQNotify(IN VIP_CQ_HANDLE CQHandle, IN VIP_PVOID Context,
                                         IN VIP_CQ_NOTIFY_HANDLER Handler);
/* [28] */ extern VIP_RETURN VipCreateCQ(IN VIP_NIC_HANDLE NicHandle, IN VIP_ULONG EntryCount,
                                         OUT VIP_CQ_HANDLE *CQHandle);
/* [29] */ extern VIP_RETURN VipDestroyCQ(IN VIP_CQ_HANDLE CQHandle);
/* [30] */ extern VIP_RETURN VipResizeCQ(IN VIP_CQ_HANDLE CQHandle, IN VIP_ULONG EntryCount);
/* [31] */ extern VIP_RETURN VipQueryNic(IN VIP_NIC_HANDLE NicHandle,
                                         OUT VIP_NIC_ATTRIBUTES *NicAttribs);
/* [32] */ extern VIP_RETURN VipSetViAttributes(IN VIP_VI_HANDLE ViHandle,
                                                IN VIP_VI_ATTRIBUTES *ViAttribs);
/* [33] */ extern VIP_RETURN VipQueryVi(IN VIP_VI_HANDLE ViHandle, OUT VIP_VI_STATE *State,
                                        OUT VIP_VI_ATTRIBUTES *ViAttribs,
                                        OUT VIP_BOOLEAN *ViSendQEmpty,
                                        OUT VIP_BOOLEAN *ViRecvQEmpty);
/* [34] */ extern VIP_RETURN VipSetMemAttributes(IN VIP_NIC_HANDLE NicHandle, IN VIP_PVOID Address,
                                                 IN VIP_MEM_HANDLE MemHandle,
                                                 IN VIP_MEM_ATTRIBUTES *MemAttribs);
/* [35] */ extern VIP_RETURN VipQueryMem(IN VIP_NIC_HANDLE NicHandle, IN VIP_PVOID Address,
                                         IN VIP_MEM_HANDLE MemHandle,
                                         OUT VIP_MEM_ATTRIBUTES *MemAttribs);
/* [36] */ extern VIP_RETURN VipQuerySystemManagementInfo(IN VIP_NIC_HANDLE NicHandle,
                                                          IN VIP_ULONG InfoType,
                                                          IN OUT VIP_PVOID SysManInfo);
/* [37] */ extern VIP_RETURN VipErrorCallback(IN VIP_NIC_HANDLE NicHandle, IN VIP_PVOID Context,
                                              IN VIP_ERROR_HANDLER Handler);
/* [38] */ extern VIP_RETURN VipNSInit(IN VIP_NIC_HANDLE NicHandle, IN VIP_PVOID NSInitInfo);
/* [39] */ extern VIP_RETURN VipNSGetHostByName(IN VIP_NIC_HANDLE NicHandle, IN VIP_CHAR *Name,
                                                OUT VIP_NET_ADDRESS *Address,
                                                IN VIP_ULONG NameIndex);
/* [40] */ extern VIP_RETURN VipNSGetHostByAddr(IN VIP_NIC_HANDLE NicHandle,
                                                IN VIP_NET_ADDRESS *Address, OUT VIP_CHAR *Name,
                                                IN OUT VIP_ULONG *NameLen);
/* [41] */ extern VIP_RETURN VipNSShutdown(IN VIP_NIC_HANDLE NicHandle);

#ifdef __cplusplus
}
#endif

#endif /* _VIPL_ */
