# C[M x N] (f32) = A[M x K] * B[K x N] (bf16), one TM x TC output tile per grid program
# (program_id 0 = tile row, 1 = tile column). The k loop streams TM x TR tiles of A and TR x TC
# tiles of B through two SRAM slots (dma0 loads one while the matrix unit works on the other),
# accumulating in the accumulator. Borders: out-of-bounds reads give 0, writes are dropped.
# Bindings: r1 A, r2 B, r3 C (HBM), r12 M, r13 K, r14 N, r15 r16 r17 row strides of A B C (bytes).
# Defines: TM TR TC. Semaphores: s0 free slots, s1 loaded slots, s2 finished tile.
.equ ES, 2
.equ ABYTES, TM * TR * ES
.equ BBYTES, TR * TC * ES
.equ SB0, 2 * ABYTES
        li r11, ACC
        mx.cfgi mode, bf16
        mx.cfgi m, TM
        mx.cfgi k, TR
        mx.cfgi n, TC
        mx.cfgi lda, TR * ES
        mx.cfgi ldw, TC * ES
        mx.cfgi ldc, TC * 4
        dma.cfgi pad, 0
        dma.cfgi esize, ES
        dma.cfgi n2, 1
        sem.sig cp, s0, 2
        muli r4, r24, TM         # m0
        muli r5, r25, TC         # n0
        li r20, 0                # k step: slot = r20 & 1
        li r7, 0                 # k0
kloop:  andi r21, r20, 1
        muli r22, r21, ABYTES    # A slot
        muli r23, r21, BBYTES
        addi r23, r23, SB0       # B slot
        dma.cfgi n0, TR          # A tile: rows m0.., columns k0..
        dma.cfgi n1, TM
        dma.cfg hs1, r15
        dma.cfgi ls1, TR * ES
        sub r8, r13, r7
        dma.cfg v0, r8
        sub r8, r12, r4
        dma.cfg v1, r8
        mul r9, r4, r15
        muli r10, r7, ES
        add r9, r9, r10
        add r9, r9, r1
        sem.wait dma0, s0, 1
        dma.ld dma0, r22, r9
        dma.cfgi n0, TC          # B tile: rows k0.., columns n0..
        dma.cfgi n1, TR
        dma.cfg hs1, r16
        dma.cfgi ls1, TC * ES
        sub r8, r14, r5
        dma.cfg v0, r8
        sub r8, r13, r7
        dma.cfg v1, r8
        mul r9, r7, r16
        muli r10, r5, ES
        add r9, r9, r10
        add r9, r9, r2
        dma.ld dma0, r23, r9
        sem.sig dma0, s1, 1
        sem.wait mx, s1, 1
        mx.pre r23
        beq r7, r0, first
        mx.mma r11, r22
        jmp issued
first:  mx.mm r11, r22
issued: sem.sig mx, s0, 1
        addi r20, r20, 1
        addi r7, r7, TR
        blt r7, r13, kloop
        sem.sig mx, s2, 1        # store the finished tile
        sem.wait dma0, s2, 1
        dma.cfgi esize, 4
        dma.cfgi n0, TC
        dma.cfgi n1, TM
        dma.cfg hs1, r17
        dma.cfgi ls1, TC * 4
        sub r8, r14, r5
        dma.cfg v0, r8
        sub r8, r12, r4
        dma.cfg v1, r8
        mul r9, r4, r17
        shli r10, r5, 2
        add r9, r9, r10
        add r9, r9, r3
        dma.st dma0, r9, r11
        sem.wait cp, s0, 2       # both slots free again: semaphores back at 0
        halt
