// Smoke test of the SystemC dependency: a producer and consumer exchange 8 tokens over a fifo
// with timed waits; checks the values and the simulated end time.
// SPDX-License-Identifier: Apache-2.0
#include <systemc>

#include <cstdio>

SC_MODULE(Producer) {
  sc_core::sc_fifo_out<int> out;
  void run() {
    for (int i = 0; i < 8; ++i) {
      wait(10, sc_core::SC_NS);
      out.write(i * i);
    }
  }
  SC_CTOR(Producer) { SC_THREAD(run); }
};

SC_MODULE(Consumer) {
  sc_core::sc_fifo_in<int> in;
  int sum = 0;
  void run() {
    for (int i = 0; i < 8; ++i)
      sum += in.read();
  }
  SC_CTOR(Consumer) { SC_THREAD(run); }
};

int sc_main(int, char **) {
  sc_core::sc_fifo<int> fifo(2);
  Producer p("producer");
  Consumer c("consumer");
  p.out(fifo);
  c.in(fifo);
  sc_core::sc_start();
  const double end_ns = sc_core::sc_time_stamp().to_seconds() * 1e9;
  std::printf("sum=%d end=%.0fns\n", c.sum, end_ns);
  return (c.sum == 140 && end_ns > 79 && end_ns < 81) ? 0 : 1;
}
