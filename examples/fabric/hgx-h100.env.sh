# NCCL/UCX settings from accel fabric env: source this file in the pod, then
# start each rank with LOCAL_RANK set (torchrun does) and source it again,
# or use the wrapper of `accel fabric pod`.
# note: NICs outside the accelerators' PCIe switches left out as storage/management: mlx5_1, mlx5_2, mlx5_7, mlx5_8 (--keep-unswitched uses them)
# LOCAL_RANK k uses the k-th GPU in PCI order, the order the pairing uses
export CUDA_DEVICE_ORDER='PCI_BUS_ID'
# exact HCA list (leading '='): the 8 NICs paired with the GPUs; storage/management NICs stay out
export NCCL_IB_HCA='=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1'
# bootstrap over the pod network, never over the RDMA netdevs
export NCCL_SOCKET_IFNAME='=eth0'
# rail-optimised fabric: NIC k of every node is on rail k, never cross rails
export NCCL_CROSS_NIC='0'
# RDMA plus node-local and GPU transports, no TCP
export UCX_TLS='rc,sm,self,cuda_copy,cuda_ipc'
# per rank: UCX does not pair GPUs with NICs, so each rank names its own
if [ -n "${LOCAL_RANK:-}" ]; then
  case "${LOCAL_RANK:-}" in
    0) export UCX_NET_DEVICES='mlx5_0:1' ;;  # GPU 0000:1b:00.0
    1) export UCX_NET_DEVICES='mlx5_3:1' ;;  # GPU 0000:43:00.0
    2) export UCX_NET_DEVICES='mlx5_4:1' ;;  # GPU 0000:52:00.0
    3) export UCX_NET_DEVICES='mlx5_5:1' ;;  # GPU 0000:61:00.0
    4) export UCX_NET_DEVICES='mlx5_6:1' ;;  # GPU 0000:9d:00.0
    5) export UCX_NET_DEVICES='mlx5_9:1' ;;  # GPU 0000:c3:00.0
    6) export UCX_NET_DEVICES='mlx5_10:1' ;;  # GPU 0000:d1:00.0
    7) export UCX_NET_DEVICES='mlx5_11:1' ;;  # GPU 0000:df:00.0
    *) echo "accel rank-env: LOCAL_RANK '${LOCAL_RANK:-}' is not one of 0..7; UCX picks NICs itself" >&2 ;;
  esac
fi
