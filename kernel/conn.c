// SPDX-License-Identifier: GPL-2.0
/*
 * The LLP stream object that the connection manager and the transport
 * share (conn.h): its last reference lets go of the QP and the device.
 */
#include <linux/slab.h>

#include "conn.h"
#include "device.h"
#include "qp.h"

static void vd_conn_free(struct kref *ref)
{
	struct vd_conn *conn = container_of(ref, struct vd_conn, ref);

	vd_qp_put(conn->qp);
	vd_device_put(conn->dev);
	kfree(conn);
}

/**
 * vd_conn_put() - drop a reference
 * @conn: the stream, or NULL (a no-op)
 *
 * The last put drops the QP and the device references, which may sleep.
 *
 * Context: Process context only.
 */
void vd_conn_put(struct vd_conn *conn)
{
	if (conn)
		kref_put(&conn->ref, vd_conn_free);
}
