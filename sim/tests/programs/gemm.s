# Tiled GEMM: C[M x N] (f32, or i32 in i8 mode) = A[M x K] * B[K x N], row-major in HBM.
# Output tiles of TM x TC are dealt to the cores round robin; for each, the k loop streams
# TM x TR tiles of A and TR x TC tiles of B through two SRAM slots (double buffering: dma0 loads
# slot s while the matrix unit works on the other), accumulating in the accumulator. Borders are
# handled by the DMA: out-of-bounds reads give 0, out-of-bounds writes are dropped.
# Defines: M N K, A B C (HBM addresses), MODE (bf16 f16 i8 f32), ES (input bytes), TM TR TC.
# Semaphores: s0 free slots, s1 loaded slots, s2 finished accumulator tiles.
.equ ABYTES, TM * TR * ES
.equ BBYTES, TR * TC * ES
.equ SB0, 2 * ABYTES
        coreid r1
        ncores r2
        li r6, 0                 # owner of the current output tile
        li r20, 0                # k-step counter: slot = r20 & 1
        li r11, ACC
        mx.cfgi mode, MODE
        mx.cfgi m, TM
        mx.cfgi k, TR
        mx.cfgi n, TC
        mx.cfgi lda, TR * ES
        mx.cfgi ldw, TC * ES
        mx.cfgi ldc, TC * 4
        dma.cfgi pad, 0
        sem.sig cp, s0, 2        # both slots start free
        li r4, 0                 # m0
mloop:  li r5, 0                 # n0
nloop:  bne r6, r1, next
        li r7, 0                 # k0
kloop:  andi r21, r20, 1
        muli r22, r21, ABYTES    # A slot
        muli r23, r21, BBYTES
        addi r23, r23, SB0       # B slot
        # A tile: rows m0.., columns k0..
        dma.cfgi esize, ES
        dma.cfgi n0, TR
        dma.cfgi n1, TM
        dma.cfgi hs1, K * ES
        dma.cfgi ls1, TR * ES
        li r8, K
        sub r8, r8, r7
        dma.cfg v0, r8
        li r8, M
        sub r8, r8, r4
        dma.cfg v1, r8
        muli r9, r4, K
        add r9, r9, r7
        muli r9, r9, ES
        li r10, A
        add r9, r9, r10
        sem.wait dma0, s0, 1
        dma.ld dma0, r22, r9
        # B tile: rows k0.., columns n0..
        dma.cfgi n0, TC
        dma.cfgi n1, TR
        dma.cfgi hs1, N * ES
        dma.cfgi ls1, TC * ES
        li r8, N
        sub r8, r8, r5
        dma.cfg v0, r8
        li r8, K
        sub r8, r8, r7
        dma.cfg v1, r8
        muli r9, r7, N
        add r9, r9, r5
        muli r9, r9, ES
        li r10, B
        add r9, r9, r10
        dma.ld dma0, r23, r9
        sem.sig dma0, s1, 1
        # the matrix unit: weights = B tile, stream the A tile
        sem.wait mx, s1, 1
        mx.pre r23
        beq r7, r0, first
        mx.mma r11, r22
        jmp issued
first:  mx.mm r11, r22
issued: sem.sig mx, s0, 1
        addi r20, r20, 1
        addi r7, r7, TR
        li r8, K
        blt r7, r8, kloop
        # store the finished accumulator tile
        sem.sig mx, s2, 1
        sem.wait dma0, s2, 1
        dma.cfgi esize, 4
        dma.cfgi n0, TC
        dma.cfgi n1, TM
        dma.cfgi hs1, N * 4
        dma.cfgi ls1, TC * 4
        li r8, N
        sub r8, r8, r5
        dma.cfg v0, r8
        li r8, M
        sub r8, r8, r4
        dma.cfg v1, r8
        muli r9, r4, N
        add r9, r9, r5
        muli r9, r9, 4
        li r10, C
        add r9, r9, r10
        dma.st dma0, r9, r11
next:   addi r6, r6, 1
        bne r6, r2, owned
        li r6, 0
owned:  addi r5, r5, TC
        li r8, N
        blt r5, r8, nloop
        addi r4, r4, TM
        li r8, M
        blt r4, r8, mloop
        halt
