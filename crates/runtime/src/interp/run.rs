//! Execution of a linearized function over a register file.
//!
//! A [`Frame`] is one runtime's mutable state for one function: the registers, one argument
//! buffer per kernel instruction (constants placed once, registers moved or swapped in for
//! each call, so passing arguments allocates nothing), and the memory plan's planned tensors.

use super::prepack::{self, Prepacked};
use super::{Arg, Block, Function, Instr, Kind, ListKind, Mode, Reg, SymOp, out};
use crate::exec::profile::{OpStat, describe};
use crate::exec::{ExecError, loc_string};
use crate::fusion::{FusionKernel, FusionOutcome, OutputAlloc};
use crate::plan::PlanState;
use crate::tensor::{KernelError, SharedLayout, Tensor};
use crate::value::IValue;

/// The registers and argument buffers of one runtime.
pub(crate) struct Frame {
    pub regs: Vec<IValue>,
    argbufs: Vec<Vec<IValue>>,
    /// For each register, the planning candidate it holds, if any.
    reg_home: Vec<Option<usize>>,
    /// Per kernel slot of a view op, the layout of its last result (reused when the next
    /// result has the same sizes and strides, so the view allocates nothing).
    view_layouts: Vec<Option<SharedLayout>>,
    /// Per kernel slot of a fusion group, the fresh outputs of its kernel's last call, kept to
    /// be written again by the next call once nothing else holds them (see [`KernelOutputs`]).
    recycled: Vec<Vec<Option<Tensor>>>,
    /// The operands of the fusion kernel being called, kept across calls so that a call
    /// allocates no list of them.
    fusion_inputs: Vec<Tensor>,
}

fn fill_argbufs(block: &Block, bufs: &mut [Vec<IValue>]) {
    for ins in &block.instrs {
        fill_instr_argbufs(ins, bufs);
    }
}

/// Places the constant arguments of `ins` (and of the instructions nested in it) in their buffers.
fn fill_instr_argbufs(ins: &Instr, bufs: &mut [Vec<IValue>]) {
    match &ins.kind {
        Kind::Kernel { slot, .. } => {
            if let Some(buf) = bufs.get_mut(*slot) {
                *buf = ins
                    .args
                    .iter()
                    .map(|a| match a {
                        Arg::Const(v) => v.clone(),
                        Arg::Reg { .. } => IValue::None,
                    })
                    .collect();
            }
        }
        Kind::If { then_block, else_block } => {
            fill_argbufs(then_block, bufs);
            fill_argbufs(else_block, bufs);
        }
        Kind::Loop { body } | Kind::Fusion { body, .. } => fill_argbufs(body, bufs),
        _ => {}
    }
}

/// The kernel slots of `ins` and of the instructions nested in it.
fn instr_slots(ins: &Instr, out: &mut Vec<usize>) {
    let block = |b: &Block, out: &mut Vec<usize>| b.instrs.iter().for_each(|i| instr_slots(i, out));
    match &ins.kind {
        Kind::Kernel { slot, .. } => out.push(*slot),
        Kind::Fusion { body, slot, .. } => {
            out.push(*slot);
            block(body, out);
        }
        Kind::If { then_block, else_block } => {
            block(then_block, out);
            block(else_block, out);
        }
        Kind::Loop { body } => block(body, out),
        _ => {}
    }
}

/// Every register `ins` and the instructions nested in it read or write.
pub(crate) fn instr_regs(ins: &Instr, out: &mut Vec<Reg>) {
    fn block(b: &Block, out: &mut Vec<Reg>) {
        out.extend(&b.args);
        b.instrs.iter().for_each(|i| instr_regs(i, out));
        out.extend(b.results.iter().filter_map(|a| match a {
            Arg::Reg { reg, .. } => Some(*reg),
            Arg::Const(_) => None,
        }));
    }
    out.extend(ins.args.iter().filter_map(|a| match a {
        Arg::Reg { reg, .. } => Some(*reg),
        Arg::Const(_) => None,
    }));
    out.extend(&ins.outs);
    match &ins.kind {
        Kind::If { then_block, else_block } => {
            block(then_block, out);
            block(else_block, out);
        }
        Kind::Loop { body } | Kind::Fusion { body, .. } => block(body, out),
        _ => {}
    }
}

fn kernel_error(ins: &Instr, e: KernelError) -> ExecError {
    ExecError::Kernel { op: ins.name.to_string(), loc: loc_string(&ins.loc), message: e.to_string() }
}

fn runtime_error(ins: &Instr, message: impl Into<String>) -> ExecError {
    ExecError::Runtime { op: ins.name.to_string(), loc: loc_string(&ins.loc), message: message.into() }
}

fn as_cond(v: &IValue) -> Option<bool> {
    match v {
        IValue::Bool(b) => Some(*b),
        IValue::Int(i) => Some(*i != 0),
        IValue::Tensor(t) if t.numel() == 1 => t.item().ok().map(|s| s.to_f64() != 0.0),
        _ => None,
    }
}

impl Frame {
    pub fn new(f: &Function) -> Frame {
        let mut regs = vec![IValue::None; f.num_regs];
        for (r, v) in &f.const_regs {
            if let Some(slot) = regs.get_mut(*r as usize) {
                *slot = v.clone();
            }
        }
        let mut argbufs = vec![Vec::new(); f.kernel_slots];
        fill_argbufs(&f.body, &mut argbufs);
        let mut reg_home = vec![None; f.num_regs];
        for (h, c) in f.candidates.iter().enumerate() {
            if let Some(slot) = reg_home.get_mut(c.reg as usize) {
                *slot = Some(h);
            }
        }
        Frame {
            regs,
            argbufs,
            reg_home,
            view_layouts: vec![None; f.kernel_slots],
            recycled: vec![Vec::new(); f.kernel_slots],
            fusion_inputs: Vec::new(),
        }
    }

    /// A frame with no registers, for [`Frame::eval_detached`].
    pub fn scratch() -> Frame {
        Frame {
            regs: Vec::new(),
            argbufs: Vec::new(),
            reg_home: Vec::new(),
            view_layouts: Vec::new(),
            recycled: Vec::new(),
            fusion_inputs: Vec::new(),
        }
    }

    /// Runs one instruction whose operands are all known when the program is compiled, through
    /// the path a run takes (its out-variant, its prepacked operand, its fusion kernel or, when
    /// that declines, its body), and returns its results. `inputs` are the registers it reads
    /// (its constant operands and the constants its nested blocks read), `num_regs` and `slots`
    /// bound the registers and kernel slots it names. Nothing it uses is planned, and the frame
    /// keeps none of its values afterwards.
    pub fn eval_detached(
        &mut self,
        ins: &Instr,
        num_regs: usize,
        slots: usize,
        inputs: &[(Reg, IValue)],
    ) -> Result<Vec<IValue>, ExecError> {
        if self.regs.len() < num_regs {
            self.regs.resize(num_regs, IValue::None);
            self.reg_home.resize(num_regs, None);
        }
        if self.argbufs.len() < slots {
            self.argbufs.resize(slots, Vec::new());
            self.view_layouts.resize(slots, None);
            self.recycled.resize(slots, Vec::new());
        }
        fill_instr_argbufs(ins, &mut self.argbufs);
        for (r, v) in inputs {
            self.set(*r, v.clone());
        }
        let mut plan = PlanState::new(0);
        let result = self.step(ins, &mut plan);
        let outs: Vec<IValue> = ins.outs.iter().map(|&r| self.take_reg(r)).collect();
        let mut touched = Vec::new();
        instr_regs(ins, &mut touched);
        for r in touched {
            self.set(r, IValue::None);
        }
        let mut used = Vec::new();
        instr_slots(ins, &mut used);
        for s in used {
            if let Some(b) = self.argbufs.get_mut(s) {
                b.clear();
            }
            if let Some(k) = self.recycled.get_mut(s) {
                k.clear();
            }
        }
        result.map(|()| outs)
    }

    fn set(&mut self, r: Reg, v: IValue) {
        if let Some(slot) = self.regs.get_mut(r as usize) {
            *slot = v;
        }
    }

    fn take_reg(&mut self, r: Reg) -> IValue {
        self.regs.get_mut(r as usize).map(|s| std::mem::replace(s, IValue::None)).unwrap_or(IValue::None)
    }

    /// A value that died: planned tensors go back to their home, others are dropped.
    fn retire(&mut self, r: Reg, v: IValue, plan: &mut PlanState) {
        if let (Some(Some(h)), IValue::Tensor(t)) = (self.reg_home.get(r as usize), v) {
            plan.give_back(*h, t);
        }
    }

    fn arg<'a>(&'a self, ins: &'a Instr, i: usize) -> Result<&'a IValue, ExecError> {
        ins.args.get(i).map(|a| self.read(a)).ok_or_else(|| runtime_error(ins, format!("missing operand #{i}")))
    }

    fn read<'a>(&'a self, a: &'a Arg) -> &'a IValue {
        match a {
            Arg::Const(v) => v,
            Arg::Reg { reg, .. } => self.regs.get(*reg as usize).unwrap_or(&IValue::None),
        }
    }

    /// Owned values of `args`: clones first, then moves (so a value both cloned and moved is cloned before it leaves).
    fn take_all(&mut self, args: &[Arg]) -> Vec<IValue> {
        let mut out: Vec<IValue> = args
            .iter()
            .map(|a| match a {
                Arg::Reg { mode: Mode::Move, .. } => IValue::None,
                other => self.read(other).clone(),
            })
            .collect();
        for (o, a) in out.iter_mut().zip(args) {
            if let Arg::Reg { reg, mode: Mode::Move } = a {
                *o = self.take_reg(*reg);
            }
        }
        out
    }

    /// Clears the moved registers of a prim instruction that only read them, then its free list.
    fn finish(&mut self, ins: &Instr, plan: &mut PlanState) {
        for a in &ins.args {
            if let Arg::Reg { reg, mode: Mode::Move } = a {
                let v = self.take_reg(*reg);
                self.retire(*reg, v, plan);
            }
        }
        for &r in &ins.free {
            let v = self.take_reg(r);
            self.retire(r, v, plan);
        }
    }

    /// Runs a block; its results stay in its terminator's registers (read with `results`).
    pub fn run_block(&mut self, block: &Block, plan: &mut PlanState) -> Result<(), ExecError> {
        for &r in &block.entry_free {
            self.set(r, IValue::None);
        }
        for ins in &block.instrs {
            self.step(ins, plan)?;
        }
        Ok(())
    }

    /// [`Frame::run_block`], timing each instruction into `stats` (one per instruction of
    /// `block`) and noting its first result.
    pub fn run_block_profiled(&mut self, block: &Block, plan: &mut PlanState, stats: &mut [OpStat]) -> Result<(), ExecError> {
        for &r in &block.entry_free {
            self.set(r, IValue::None);
        }
        for (ins, s) in block.instrs.iter().zip(stats.iter_mut()) {
            let t = std::time::Instant::now();
            self.step(ins, plan)?;
            s.nanos += t.elapsed().as_nanos() as u64;
            s.calls += 1;
            if s.result.is_none()
                && let Some(v) = ins.outs.first().and_then(|&r| self.regs.get(r as usize))
            {
                s.result = Some(describe(v));
            }
        }
        Ok(())
    }

    /// Hands the owned results of a block that has run to `f` (index, value), without collecting them.
    pub fn emit_results(&mut self, block: &Block, mut f: impl FnMut(usize, IValue)) {
        for (k, a) in block.results.iter().enumerate() {
            if !matches!(a, Arg::Reg { mode: Mode::Move, .. }) {
                f(k, self.read(a).clone());
            }
        }
        for (k, a) in block.results.iter().enumerate() {
            if let Arg::Reg { reg, mode: Mode::Move } = a {
                f(k, self.take_reg(*reg));
            }
        }
    }

    /// The owned results of a block that has run.
    pub fn results(&mut self, block: &Block) -> Vec<IValue> {
        self.take_all(&block.results)
    }

    fn step(&mut self, ins: &Instr, plan: &mut PlanState) -> Result<(), ExecError> {
        match &ins.kind {
            Kind::Kernel { f, slot, out, packed, .. } => return self.kernel(ins, *f, *slot, *out, packed.as_deref(), plan),
            Kind::ListConstruct(kind) => {
                let vals = self.take_all(&ins.args);
                let list = build_list(*kind, vals);
                self.set_one(ins, list)?;
            }
            Kind::ListUnpack => {
                let v = self.arg(ins, 0)?;
                let items =
                    list_items(v).ok_or_else(|| runtime_error(ins, format!("expected a list, got {}", v.kind())))?;
                if items.len() != ins.outs.len() {
                    return Err(runtime_error(
                        ins,
                        format!("cannot unpack a list of {} elements into {} values", items.len(), ins.outs.len()),
                    ));
                }
                self.set_outs(ins, items)?;
            }
            Kind::TupleConstruct => {
                let vals = self.take_all(&ins.args);
                self.set_one(ins, IValue::Tuple(vals))?;
            }
            Kind::TupleUnpack => {
                let items = match self.arg(ins, 0)? {
                    IValue::Tuple(items) => items.clone(),
                    other => list_items(other).ok_or_else(|| runtime_error(ins, format!("expected a tuple, got {}", other.kind())))?,
                };
                if items.len() != ins.outs.len() {
                    return Err(runtime_error(
                        ins,
                        format!("cannot unpack a tuple of {} elements into {} values", items.len(), ins.outs.len()),
                    ));
                }
                self.set_outs(ins, items)?;
            }
            Kind::TupleIndex(i) => {
                let items = list_items(self.arg(ins, 0)?).unwrap_or_default();
                let v = items
                    .get(*i)
                    .cloned()
                    .ok_or_else(|| runtime_error(ins, format!("tuple index {i} out of range for {} elements", items.len())))?;
                self.set_one(ins, v)?;
            }
            Kind::Uninitialized => {
                let n = ins.outs.len();
                self.set_outs(ins, vec![IValue::None; n])?;
            }
            Kind::Raise => {
                let msg = match ins.args.first().map(|a| self.read(a)) {
                    Some(IValue::Str(s)) => s.to_string(),
                    Some(other) => format!("{other:?}"),
                    None => String::new(),
                };
                return Err(ExecError::Raised { message: msg, loc: loc_string(&ins.loc) });
            }
            Kind::Sym(op) => {
                let v = sym(*op, self.arg(ins, 0)?, self.arg(ins, 1)?).map_err(|m| runtime_error(ins, m))?;
                self.set_one(ins, v)?;
            }
            Kind::If { then_block, else_block } => {
                let c = self.arg(ins, 0)?;
                let cond = as_cond(c).ok_or_else(|| runtime_error(ins, format!("condition must be a bool, got {}", c.kind())))?;
                let b = if cond { then_block } else { else_block };
                self.run_block(b, plan)?;
                let vals = self.results(b);
                self.set_outs(ins, vals)?;
            }
            Kind::Loop { body } => self.run_loop(ins, body, plan)?,
            Kind::Fusion { body, kernel, slot } => {
                if let Some(k) = kernel
                    && self.run_fusion_kernel(ins, &**k, *slot, plan)?
                {
                    self.finish(ins, plan);
                    return Ok(());
                }
                let vals = self.take_all(&ins.args);
                if vals.len() != body.args.len() {
                    return Err(runtime_error(ins, "operand count does not match the body's arguments"));
                }
                for (&r, v) in body.args.iter().zip(vals) {
                    self.set(r, v);
                }
                self.run_block(body, plan)?;
                let outs = self.results(body);
                self.set_outs(ins, outs)?;
            }
        }
        self.finish(ins, plan);
        Ok(())
    }

    fn run_loop(&mut self, ins: &Instr, body: &Block, plan: &mut PlanState) -> Result<(), ExecError> {
        if ins.args.len() < 2 {
            return Err(runtime_error(ins, "expects a trip count and a condition"));
        }
        let max = match self.arg(ins, 0)? {
            IValue::Int(n) => *n,
            IValue::None => i64::MAX,
            other => return Err(runtime_error(ins, format!("trip count must be an int, got {}", other.kind()))),
        };
        let c = self.arg(ins, 1)?;
        let mut cond = as_cond(c).ok_or_else(|| runtime_error(ins, format!("condition must be a bool, got {}", c.kind())))?;
        let mut carried = self.take_all(&ins.args[2..]);
        if body.args.len() != carried.len() + 1 || body.results.len() != carried.len() + 1 || ins.outs.len() != carried.len() {
            return Err(runtime_error(ins, "body arguments, yielded values and results do not line up"));
        }
        let mut i: i64 = 0;
        while i < max && cond {
            self.set(body.args[0], IValue::Int(i));
            for (&r, v) in body.args[1..].iter().zip(carried.drain(..)) {
                self.set(r, v);
            }
            self.run_block(body, plan)?;
            let mut res = self.results(body);
            let c = res.first().unwrap_or(&IValue::None);
            cond = as_cond(c).ok_or_else(|| runtime_error(ins, format!("loop condition must be a bool, got {}", c.kind())))?;
            carried = res.split_off(1);
            i += 1;
        }
        for &r in &body.args {
            self.set(r, IValue::None);
        }
        self.set_outs(ins, carried)
    }

    /// Writes the single result of `ins` straight into its register.
    fn set_one(&mut self, ins: &Instr, v: IValue) -> Result<(), ExecError> {
        match ins.outs.as_slice() {
            [r] => {
                self.set(*r, v);
                Ok(())
            }
            outs => Err(runtime_error(ins, format!("produced 1 value for {} results", outs.len()))),
        }
    }

    /// Calls a fusion group's compiled kernel and sets its results; `false` when it declines
    /// (or an operand is not a tensor), and the group is then interpreted. The operands are
    /// read in place, so a call allocates nothing but what the kernel does; those the
    /// instruction moves stay in their registers until [`Frame::finish`] gives them back to
    /// the memory plan, as for any other instruction.
    fn run_fusion_kernel(&mut self, ins: &Instr, k: &dyn FusionKernel, slot: usize, plan: &mut PlanState) -> Result<bool, ExecError> {
        let mut inputs = std::mem::take(&mut self.fusion_inputs);
        inputs.clear();
        for a in &ins.args {
            match self.read(a) {
                IValue::Tensor(t) => inputs.push(t.clone()),
                _ => {
                    self.fusion_inputs = inputs;
                    return Ok(false);
                }
            }
        }
        let mut alloc = KernelOutputs { plan, home: ins.home, kept: self.recycled.get_mut(slot) };
        let outcome = k.run(&inputs, &mut alloc);
        inputs.clear();
        self.fusion_inputs = inputs;
        match outcome.map_err(|e| kernel_error(ins, e))? {
            FusionOutcome::Ran(outs) => {
                if outs.len() != ins.outs.len() {
                    return Err(runtime_error(ins, format!("produced {} values for {} results", outs.len(), ins.outs.len())));
                }
                for (&r, t) in ins.outs.iter().zip(outs) {
                    self.set(r, IValue::Tensor(t));
                }
                Ok(true)
            }
            FusionOutcome::Declined(_) => Ok(false),
        }
    }

    fn set_outs(&mut self, ins: &Instr, vals: Vec<IValue>) -> Result<(), ExecError> {
        if vals.len() != ins.outs.len() {
            return Err(runtime_error(ins, format!("produced {} values for {} results", vals.len(), ins.outs.len())));
        }
        for (&r, v) in ins.outs.iter().zip(vals) {
            self.set(r, v);
        }
        Ok(())
    }

    fn kernel(
        &mut self,
        ins: &Instr,
        f: crate::kernels::KernelFn,
        slot: usize,
        out_op: Option<out::OutOp>,
        packed: Option<&Prepacked>,
        plan: &mut PlanState,
    ) -> Result<(), ExecError> {
        let Some(mut buf) = self.argbufs.get_mut(slot).map(std::mem::take) else {
            return Err(runtime_error(ins, "internal error: missing argument buffer"));
        };
        // Clones first, then moves and borrows (swaps), so repeated operands see the value.
        for (pos, a) in ins.args.iter().enumerate() {
            if let Arg::Reg { reg, mode: Mode::Clone } = a {
                buf[pos] = self.regs.get(*reg as usize).cloned().unwrap_or(IValue::None);
            }
        }
        for (pos, a) in ins.args.iter().enumerate() {
            if let Arg::Reg { reg, mode: Mode::Move | Mode::Borrow } = a {
                if let Some(r) = self.regs.get_mut(*reg as usize) {
                    std::mem::swap(r, &mut buf[pos]);
                }
            }
        }
        let result = self.call(ins, f, slot, out_op, packed, &buf, plan);
        for (pos, a) in ins.args.iter().enumerate() {
            match a {
                Arg::Reg { reg, mode: Mode::Borrow } => {
                    if let Some(r) = self.regs.get_mut(*reg as usize) {
                        std::mem::swap(r, &mut buf[pos]);
                    }
                }
                Arg::Reg { reg, mode: Mode::Move } => {
                    let v = std::mem::replace(&mut buf[pos], IValue::None);
                    self.retire(*reg, v, plan);
                }
                Arg::Reg { mode: Mode::Clone, .. } => buf[pos] = IValue::None,
                Arg::Const(_) => {}
            }
        }
        if let Some(b) = self.argbufs.get_mut(slot) {
            *b = buf;
        }
        match result? {
            Produced::Out(t, extra) => {
                let Some((&r, rest)) = ins.outs.split_first() else {
                    return Err(runtime_error(ins, "internal error: out-variant without a result"));
                };
                if rest.len() > extra.len() {
                    return Err(runtime_error(ins, "internal error: out-variant with too many results"));
                }
                self.set(r, IValue::Tensor(t));
                for (&r, e) in rest.iter().zip(extra) {
                    self.set(r, e.map_or(IValue::None, IValue::Tensor));
                }
            }
            Produced::Many(vals) => {
                if vals.len() != ins.outs.len() {
                    return Err(runtime_error(
                        ins,
                        format!("kernel returned {} values for {} results", vals.len(), ins.outs.len()),
                    ));
                }
                for (&r, v) in ins.outs.iter().zip(vals) {
                    self.set(r, v);
                }
            }
        }
        for &r in &ins.free {
            let v = self.take_reg(r);
            self.retire(r, v, plan);
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        ins: &Instr,
        f: crate::kernels::KernelFn,
        slot: usize,
        out_op: Option<out::OutOp>,
        packed: Option<&Prepacked>,
        buf: &[IValue],
        plan: &mut PlanState,
    ) -> Result<Produced, ExecError> {
        // Complex tensors reach only kernels that handle them (see `kernels::complex`); the
        // out-variants compute in real arithmetic, so complex operands take the kernel.
        // Instructions whose operands and results are statically real skip the look.
        let (mut f, mut out_op) = (f, out_op);
        let gated = matches!(ins.kind, Kind::Kernel { complex: true, .. });
        let complex = if gated { crate::kernels::complex::first_complex(buf) } else { None };
        if let Some(d) = complex {
            if let Some(g) = crate::kernels::complex::complex_form(&ins.name) {
                f = g;
            } else if !crate::kernels::complex::admits(&ins.name) {
                return Err(kernel_error(ins, crate::kernels::complex::refuse(&ins.name, d)));
            }
            out_op = out_op.filter(|op| op.is_view());
        }
        if let Some(op) = out_op.filter(|op| op.is_view()) {
            if let (Some(v), Some(IValue::Tensor(a))) = (out::view_layout(op, buf), buf.first()) {
                let (meta, strides) = (v.meta, &v.strides[..v.meta.rank]);
                let cached = self.view_layouts.get(slot).and_then(|l| l.as_ref());
                let layout = match cached {
                    Some(l) if l.sizes() == meta.sizes() && l.strides() == strides => l.clone(),
                    _ => {
                        let t = Tensor::from_storage(a.storage().clone(), a.dtype(), meta.sizes(), strides, v.offset)
                            .map_err(|e| kernel_error(ins, e))?;
                        let l = t.shared_layout();
                        if let Some(c) = self.view_layouts.get_mut(slot) {
                            *c = Some(l.clone());
                        }
                        l
                    }
                };
                let t = a.view_with_layout(&layout, v.offset).map_err(|e| kernel_error(ins, e))?;
                return Ok(Produced::Out(t, [None, None]));
            }
        } else if let Some((op, meta)) = out_op.and_then(|op| Some((op, out::meta(op, buf)?))) {
            let name: &'static str = op.op().name();
            let planned = match ins.home {
                Some(h) => {
                    let t = plan.take_home(h, &meta);
                    if t.is_none() {
                        plan.observe(h, meta);
                    }
                    t
                }
                None => None,
            };
            // Unplanned results (outputs, values that escape) get fresh storage.
            let t = match planned {
                Some(t) => t,
                None => Tensor::zeros(meta.dtype, meta.sizes()).map_err(|e| kernel_error(ins, e))?,
            };
            // Further results nobody reads (freed right after the instruction) are not made.
            let read = |k: usize| ins.outs.get(k).is_some_and(|r| !ins.free.contains(r));
            let extra = match packed {
                Some(p) => prepack::compute(p, op, name, buf, &t).map(|()| [None, None]),
                None => out::compute(op, name, buf, &t, [read(1), read(2)]),
            }
            .map_err(|e| kernel_error(ins, e))?;
            return Ok(Produced::Out(t, extra));
        }
        let vals = f(buf).map_err(|e| kernel_error(ins, e))?;
        if gated
            && complex.is_none()
            && let Some(d) = crate::kernels::complex::first_complex(&vals)
            && !crate::kernels::complex::admits(&ins.name)
        {
            return Err(kernel_error(ins, crate::kernels::complex::refuse(&ins.name, d)));
        }
        Ok(Produced::Many(vals))
    }
}

/// Output storage of a fusion kernel: the planned home of a planned result (a single-result
/// group whose readers are all out-variants); otherwise the tensor this output got on the
/// instruction's previous call when nothing but the frame holds it any more (the caller
/// dropped the program's previous outputs), so steady-state calls neither allocate nor
/// zero-fill it; a fresh tensor otherwise. A recycled tensor holds the previous call's
/// values, never uninitialised memory, and the kernel overwrites every element
/// ([`OutputAlloc::output`]).
struct KernelOutputs<'p> {
    plan: &'p mut PlanState,
    home: Option<usize>,
    /// The instruction's outputs of its previous call, by index (`None`: a planned output).
    kept: Option<&'p mut Vec<Option<Tensor>>>,
}

impl OutputAlloc for KernelOutputs<'_> {
    fn output(&mut self, index: usize, dtype: ir::DType, sizes: &[usize]) -> Result<Tensor, KernelError> {
        if let (0, Some(h), Some(meta)) = (index, self.home, out::Meta::of(dtype, sizes)) {
            match self.plan.take_home(h, &meta) {
                Some(t) => return Ok(t),
                None => self.plan.observe(h, meta),
            }
        }
        let Some(kept) = self.kept.as_deref_mut() else { return Tensor::zeros(dtype, sizes) };
        if kept.len() <= index {
            kept.resize(index + 1, None);
        }
        if let Some(t) = &mut kept[index]
            && t.dtype() == dtype
            && t.sizes() == sizes
            && t.is_contiguous()
            && t.offset() == 0
            && t.storage_is_unique()
        {
            return Ok(t.clone());
        }
        let t = Tensor::zeros(dtype, sizes)?;
        kept[index] = Some(t.clone());
        Ok(t)
    }
}

enum Produced {
    /// An out-variant's result and its further results (the norms' statistics).
    Out(Tensor, out::Extra),
    Many(Vec<IValue>),
}

fn build_list(kind: ListKind, vals: Vec<IValue>) -> IValue {
    let fallback = |vals: Vec<IValue>| IValue::List(vals);
    match kind {
        ListKind::Tensor if vals.iter().all(|v| matches!(v, IValue::Tensor(_))) => {
            IValue::TensorList(vals.into_iter().filter_map(|v| v.into_tensor().ok()).collect())
        }
        ListKind::OptionalTensor if vals.iter().all(|v| matches!(v, IValue::Tensor(_) | IValue::None)) => {
            IValue::OptionalTensorList(vals.into_iter().map(|v| v.into_tensor().ok()).collect())
        }
        ListKind::Int if vals.iter().all(|v| matches!(v, IValue::Int(_))) => {
            IValue::IntList(vals.iter().filter_map(|v| v.as_int().ok()).collect())
        }
        ListKind::Float if vals.iter().all(|v| matches!(v, IValue::Float(_) | IValue::Int(_))) => {
            IValue::FloatList(vals.iter().filter_map(|v| v.as_float().ok()).collect())
        }
        ListKind::Bool if vals.iter().all(|v| matches!(v, IValue::Bool(_))) => {
            IValue::BoolList(vals.iter().filter_map(|v| v.as_bool().ok()).collect())
        }
        _ => fallback(vals),
    }
}

/// The elements of any list-like value.
pub(crate) fn list_items(v: &IValue) -> Option<Vec<IValue>> {
    Some(match v {
        IValue::List(items) | IValue::Tuple(items) => items.clone(),
        IValue::TensorList(ts) => ts.iter().cloned().map(IValue::Tensor).collect(),
        IValue::OptionalTensorList(ts) => {
            ts.iter().map(|t| t.clone().map(IValue::Tensor).unwrap_or(IValue::None)).collect()
        }
        IValue::IntList(xs) => xs.iter().map(|&x| IValue::Int(x)).collect(),
        IValue::FloatList(xs) => xs.iter().map(|&x| IValue::Float(x)).collect(),
        IValue::BoolList(xs) => xs.iter().map(|&x| IValue::Bool(x)).collect(),
        _ => return None,
    })
}

fn sym(op: SymOp, a: &IValue, b: &IValue) -> Result<IValue, String> {
    let float = matches!(a, IValue::Float(_)) || matches!(b, IValue::Float(_));
    if float {
        let (x, y) = (a.as_float().map_err(|e| e.message)?, b.as_float().map_err(|e| e.message)?);
        return Ok(match op {
            SymOp::Add => IValue::Float(x + y),
            SymOp::Sub => IValue::Float(x - y),
            SymOp::Mul => IValue::Float(x * y),
            SymOp::FloorDiv => IValue::Float((x / y).floor()),
            SymOp::Mod => IValue::Float(x - (x / y).floor() * y),
            SymOp::Max => IValue::Float(x.max(y)),
            SymOp::Eq => IValue::Bool(x == y),
            SymOp::Ne => IValue::Bool(x != y),
            SymOp::Lt => IValue::Bool(x < y),
            SymOp::Le => IValue::Bool(x <= y),
            SymOp::Gt => IValue::Bool(x > y),
            SymOp::Ge => IValue::Bool(x >= y),
        });
    }
    let (x, y) = (a.as_int().map_err(|e| e.message)?, b.as_int().map_err(|e| e.message)?);
    let overflow = || format!("integer overflow in {op:?} of {x} and {y}");
    Ok(match op {
        SymOp::Add => IValue::Int(x.checked_add(y).ok_or_else(overflow)?),
        SymOp::Sub => IValue::Int(x.checked_sub(y).ok_or_else(overflow)?),
        SymOp::Mul => IValue::Int(x.checked_mul(y).ok_or_else(overflow)?),
        SymOp::FloorDiv | SymOp::Mod => {
            if y == 0 {
                return Err("integer division by zero".into());
            }
            let q = x.checked_div(y).ok_or_else(overflow)?;
            let r = x - q * y;
            let (q, r) = if r != 0 && ((r < 0) != (y < 0)) { (q - 1, r + y) } else { (q, r) };
            IValue::Int(if op == SymOp::FloorDiv { q } else { r })
        }
        SymOp::Max => IValue::Int(x.max(y)),
        SymOp::Eq => IValue::Bool(x == y),
        SymOp::Ne => IValue::Bool(x != y),
        SymOp::Lt => IValue::Bool(x < y),
        SymOp::Le => IValue::Bool(x <= y),
        SymOp::Gt => IValue::Bool(x > y),
        SymOp::Ge => IValue::Bool(x >= y),
    })
}

impl Frame {
    /// Clears every register but the constants (after a failed run).
    pub fn reset(&mut self, f: &Function) {
        for r in self.regs.iter_mut() {
            *r = IValue::None;
        }
        for (r, v) in &f.const_regs {
            if let Some(slot) = self.regs.get_mut(*r as usize) {
                *slot = v.clone();
            }
        }
    }
}
