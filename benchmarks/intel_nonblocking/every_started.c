/* Every nonblocking collective once (MPI_I<coll> + MPI_Wait), then every persistent one
 * (MPI_<Coll>_init, MPI_Start, MPI_Wait, MPI_Request_free), 4096 ints per block: run.sh traces
 * which of Intel MPI's algorithm functions serve each call under each I_MPI_ADJUST_I<COLL> id. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define N 4096
static void go(MPI_Request *r){MPI_Wait(r,MPI_STATUS_IGNORE);}
static void per(MPI_Request *r){MPI_Start(r);MPI_Wait(r,MPI_STATUS_IGNORE);MPI_Request_free(r);}
int main(int argc,char**argv){
  MPI_Init(&argc,&argv); int p,me; MPI_Comm_size(MPI_COMM_WORLD,&p); MPI_Comm_rank(MPI_COMM_WORLD,&me);
  MPI_Comm c=MPI_COMM_WORLD; MPI_Request r;
  int *s=calloc((size_t)N*p,sizeof(int)), *d=calloc((size_t)N*p,sizeof(int));
  int cnt[64],dis[64]; MPI_Datatype ty[64]; int bd[64];
  for(int i=0;i<p;i++){cnt[i]=N;dis[i]=i*N;ty[i]=MPI_INT;bd[i]=i*N*4;}
  for(int form=0;form<2;form++){
#define DO(nb,init) do{ if(form==0){nb;go(&r);} else {init;per(&r);} }while(0)
  DO(MPI_Iallreduce(s,d,N,MPI_INT,MPI_SUM,c,&r), MPI_Allreduce_init(s,d,N,MPI_INT,MPI_SUM,c,MPI_INFO_NULL,&r));
  DO(MPI_Ibcast(s,N,MPI_INT,0,c,&r), MPI_Bcast_init(s,N,MPI_INT,0,c,MPI_INFO_NULL,&r));
  DO(MPI_Ireduce(s,d,N,MPI_INT,MPI_SUM,0,c,&r), MPI_Reduce_init(s,d,N,MPI_INT,MPI_SUM,0,c,MPI_INFO_NULL,&r));
  DO(MPI_Igather(s,N,MPI_INT,d,N,MPI_INT,0,c,&r), MPI_Gather_init(s,N,MPI_INT,d,N,MPI_INT,0,c,MPI_INFO_NULL,&r));
  DO(MPI_Iallgather(s,N,MPI_INT,d,N,MPI_INT,c,&r), MPI_Allgather_init(s,N,MPI_INT,d,N,MPI_INT,c,MPI_INFO_NULL,&r));
  DO(MPI_Ialltoall(s,N,MPI_INT,d,N,MPI_INT,c,&r), MPI_Alltoall_init(s,N,MPI_INT,d,N,MPI_INT,c,MPI_INFO_NULL,&r));
  DO(MPI_Ialltoallv(s,cnt,dis,MPI_INT,d,cnt,dis,MPI_INT,c,&r), MPI_Alltoallv_init(s,cnt,dis,MPI_INT,d,cnt,dis,MPI_INT,c,MPI_INFO_NULL,&r));
  DO(MPI_Ialltoallw(s,cnt,bd,ty,d,cnt,bd,ty,c,&r), MPI_Alltoallw_init(s,cnt,bd,ty,d,cnt,bd,ty,c,MPI_INFO_NULL,&r));
  DO(MPI_Igatherv(s,N,MPI_INT,d,cnt,dis,MPI_INT,0,c,&r), MPI_Gatherv_init(s,N,MPI_INT,d,cnt,dis,MPI_INT,0,c,MPI_INFO_NULL,&r));
  DO(MPI_Iscatterv(s,cnt,dis,MPI_INT,d,N,MPI_INT,0,c,&r), MPI_Scatterv_init(s,cnt,dis,MPI_INT,d,N,MPI_INT,0,c,MPI_INFO_NULL,&r));
  DO(MPI_Ibarrier(c,&r), MPI_Barrier_init(c,MPI_INFO_NULL,&r));
  DO(MPI_Iscatter(s,N,MPI_INT,d,N,MPI_INT,0,c,&r), MPI_Scatter_init(s,N,MPI_INT,d,N,MPI_INT,0,c,MPI_INFO_NULL,&r));
  DO(MPI_Iallgatherv(s,N,MPI_INT,d,cnt,dis,MPI_INT,c,&r), MPI_Allgatherv_init(s,N,MPI_INT,d,cnt,dis,MPI_INT,c,MPI_INFO_NULL,&r));
  DO(MPI_Iexscan(s,d,N,MPI_INT,MPI_SUM,c,&r), MPI_Exscan_init(s,d,N,MPI_INT,MPI_SUM,c,MPI_INFO_NULL,&r));
  DO(MPI_Iscan(s,d,N,MPI_INT,MPI_SUM,c,&r), MPI_Scan_init(s,d,N,MPI_INT,MPI_SUM,c,MPI_INFO_NULL,&r));
  DO(MPI_Ireduce_scatter(s,d,cnt,MPI_INT,MPI_SUM,c,&r), MPI_Reduce_scatter_init(s,d,cnt,MPI_INT,MPI_SUM,c,MPI_INFO_NULL,&r));
  DO(MPI_Ireduce_scatter_block(s,d,N,MPI_INT,MPI_SUM,c,&r), MPI_Reduce_scatter_block_init(s,d,N,MPI_INT,MPI_SUM,c,MPI_INFO_NULL,&r));
  }
  if(me==0) printf("done\n");
  MPI_Finalize(); return 0; }
