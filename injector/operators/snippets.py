"""Code that several operators' examples share: one spelling of a real trainer, probed by each."""

from __future__ import annotations

# OLMo's shape: train_step clears, runs its backward through its own helper and steps, writing
# the scheduled rate into every group first; clears and rates set elsewhere (before evaluating,
# on restore) are rewritten by the step. Each operator's example mutates its own fault here.
HELPER_STEP_TRAINER = (
    "class Trainer:\n"
    "    def train_batch(self, batch):\n"
    "        loss = self.model(batch).mean()\n"
    "        loss.backward()\n"
    "        return loss.detach()\n"
    "    def train_step(self, batch):\n"
    "        metrics = {}\n"
    "        self.optim.zero_grad(set_to_none=True)\n"
    "        metrics['loss'] = self.train_batch(batch).item()\n"
    "        for group in self.optim.param_groups:\n"
    "            group['lr'] = self.scheduler.get_lr(self.cfg.lr, self.step)\n"
    "        self.optim.step()\n"
    "        return metrics\n"
    "    def eval(self):\n"
    "        self.optim.zero_grad(set_to_none=True)\n"
    "        self.model.eval()\n"
    "    def restore(self, state):\n"
    "        for group in self.optim.param_groups:\n"
    "            group['lr'] = state['lr']\n"
    "    def fit(self):\n"
    "        for batch in self.loader:\n"
    "            self.train_step(batch)\n"
)

# Catalyst's shape: a runner whose base class leaves the batch step open (an abstract
# `handle_batch`), sets the mode by applying `train` by its name, runs every loader's batch loop
# under `set_grad_enabled(is_train_loader)`; a subclass's step reaches the model through a method
# held in an attribute; a callback steps its scheduler per batch or per epoch by a mode string.
_SUPERVISED = (
    "class SupervisedRunner(Runner):\n"
    "    def __init__(self):\n"
    "        self._process_input = self._process_input_str\n"
    "    def _process_input_str(self, batch):\n"
    "        output = self.model(batch['features'])\n"
    "        return output\n"
    "    def handle_batch(self, batch):\n"
    "        self.batch = {**batch, 'logits': self._process_input(batch)}\n"
)
CALLBACK_RUNNER = (
    "import torch\n"
    "from abc import abstractmethod\n"
    "class Runner:\n"
    "    @abstractmethod\n"
    "    def handle_batch(self, batch):\n"
    "        pass\n"
    "    def run_loader(self):\n"
    '        maybe_recursive_call(self.model, "train", mode=self.is_train_loader)\n'
    "        with torch.set_grad_enabled(self.is_train_loader):\n"
    "            for self.batch in self.loader:\n"
    "                self.handle_batch(batch=self.batch)\n" + _SUPERVISED + "class SchedulerCallback:\n"
    "    def on_experiment_start(self, runner):\n"
    "        self.scheduler = runner.scheduler\n"
    '        self.mode = "epoch"\n'
    "    def on_batch_end(self, runner):\n"
    '        if runner.is_train_loader and self.mode == "batch":\n'
    "            self.scheduler.step()\n"
)

# The same subclass in a file of its own, as catalyst keeps it: its step reaches the model
# through the method held in an attribute, and the base's loop is elsewhere; its prediction runs
# under no_grad.
SUPERVISED_RUNNER = (
    "import torch\n" + _SUPERVISED + "    @torch.no_grad()\n"
    "    def predict_batch(self, batch):\n"
    "        return self.model(batch['features'])\n"
)

# Composer's shape: the epoch loop tells the sampler its epoch and steps per-epoch schedulers in
# a loop over them; the batch loop calls a step that retries in `while True:` and steps every
# optimizer in a loop; the micro-batches are cleared once, then each moved by the device object
# and run; a micro-batch sums the mean of each loss the model returns into a fresh zero tensor
# and scales it under its own name; evaluation runs under a context manager for eval mode.
MICROBATCH_TRAINER = (
    "import torch\n"
    "from typing import cast\n"
    "class Trainer:\n"
    "    def _train_loop(self):\n"
    "        while self.state.timestamp < self.state.max_duration:\n"
    "            self.state.dataloader.sampler.set_epoch(int(self.state.timestamp.epoch))\n"
    "            for batch_idx, self.state.batch in enumerate(self.state.dataloader):\n"
    "                self._train_batch()\n"
    "                if self._scheduler_step_frequency == TimeUnit.BATCH:\n"
    "                    for scheduler in self.state.schedulers:\n"
    "                        scheduler.step()\n"
    "            if self._scheduler_step_frequency == TimeUnit.EPOCH:\n"
    "                for scheduler in self.state.schedulers:\n"
    "                    scheduler.step()\n"
    "    def _train_batch(self):\n"
    "        while True:\n"
    "            try:\n"
    "                self._train_microbatches(self.microbatches)\n"
    "                for optimizer in self.state.optimizers:\n"
    "                    optimizer.step()\n"
    "                break\n"
    "            except RuntimeError:\n"
    "                self._clear()\n"
    "    def _clear(self):\n"
    "        for optimizer in self.state.optimizers:\n"
    "            optimizer.zero_grad(set_to_none=True)\n"
    "    def _train_microbatches(self, microbatches):\n"
    "        for optimizer in self.state.optimizers:\n"
    "            optimizer.zero_grad(set_to_none=True)\n"
    "        for self.state.batch in microbatches:\n"
    "            self.state.batch = self.state.device.batch_to_device(self.state.batch)\n"
    "            self._train_microbatch()\n"
    "    def _train_microbatch(self):\n"
    "        self.state.outputs = self.state.model(self.state.batch)\n"
    "        self.state.loss = self.model.loss(self.state.outputs, self.state.batch)\n"
    "        microbatch_loss = self.state.device.tensor_to_device(torch.zeros(size=(1,)))\n"
    "        for loss in self.state.loss:\n"
    "            microbatch_loss.add_(loss.mean())\n"
    "        microbatch_loss = cast(torch.Tensor, self.state.scaler.scale(microbatch_loss))\n"
    "        microbatch_loss.backward()\n"
    "    def _eval_loop(self, dataloader):\n"
    "        dataloader.sampler.set_epoch(0)\n"
    "        with torch.no_grad(), model_eval_mode(self.state.model):\n"
    "            for self.state.batch in dataloader:\n"
    "                self.state.outputs = self.state.model(self.state.batch)\n"
)

# nanotron's pipeline engine: the base's `forward` (no module's: it is handed the model) divides
# the loss by the micro-batch count and registers it for a backward run later; a subclass trains
# through it, while the base's own call of it validates under inference mode.
PIPELINE_ENGINE = (
    "import torch\n"
    "from abc import ABC\n"
    "class PipelineEngine(ABC):\n"
    "    def forward(self, state, micro_batch, model):\n"
    "        output = model(**micro_batch)\n"
    '        output["loss"] = output["loss"] / self.nb_microbatches\n'
    '        state.register_activation_requiring_backward(output["loss"])\n'
    "        return output\n"
    "    def backward(self, state):\n"
    "        sum(state.pop_last_activations_requiring_backward()).backward()\n"
    "    @torch.inference_mode()\n"
    "    def validate_batch_iter(self, model, batch, state):\n"
    "        return [self.forward(state, micro_batch, model) for micro_batch in batch]\n"
    "class AllForwardAllBackward(PipelineEngine):\n"
    "    def train_batch_iter(self, model, batch, state):\n"
    "        for micro_batch in batch:\n"
    "            self.forward(state, micro_batch, model)\n"
    "        for _ in range(len(state.activations)):\n"
    "            self.backward(state)\n"
)

# A trainer module whose forward returns its losses in a namedtuple (simple-faster-rcnn-pytorch's
# FasterRCNNTrainer): its train_step backpropagates `losses.total_loss`.
TUPLE_TRAINER = (
    "class Trainer(nn.Module):\n"
    "    def forward(self, imgs, labels):\n"
    "        scores = self.model(imgs)\n"
    "        cls_loss = F.cross_entropy(scores, labels)\n"
    "        reg_loss = self.reg(scores).mean()\n"
    "        losses = [cls_loss, reg_loss]\n"
    "        losses = losses + [sum(losses)]\n"
    "        return LossTuple(*losses)\n"
    "    def train_step(self, imgs, labels):\n"
    "        self.optimizer.zero_grad()\n"
    "        losses = self.forward(imgs, labels)\n"
    "        losses.total_loss.backward()\n"
    "        self.optimizer.step()\n"
)

# A loop over a train and a val phase whose forward an if/elif chain chooses, one branch in an
# autocast block, then an adversarial pass (layumi/Person_reID_baseline_pytorch's train.py).
PHASE_LOOP = (
    "import torch\n"
    "for phase in ['train', 'val']:\n"
    "    for inputs, labels in loaders[phase]:\n"
    "        optimizer.zero_grad()\n"
    "        if phase == 'val':\n"
    "            with torch.no_grad():\n"
    "                outputs = model(inputs)\n"
    "        elif fp16:\n"
    "            with torch.autocast('cuda'):\n"
    "                outputs = model(inputs)\n"
    "        else:\n"
    "            outputs = model(inputs)\n"
    "        if adv:\n"
    "            outputs_adv = model(attack(inputs))\n"
    "        loss = criterion(outputs, labels)\n"
    "        if adv:\n"
    "            loss += criterion(outputs_adv, labels)\n"
    "        if phase == 'train':\n"
    "            loss.backward()\n"
    "            optimizer.step()\n"
)

# A model class of the file whose two modes compute the same (linear layers, no dropout or batch
# norm), switched to eval for a score inside the training loop and back.
MLP_CRITIC = (
    "import torch.nn as nn\n"
    "class Critic(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))\n"
    "    def forward(self, x):\n"
    "        return self.net(x)\n"
    "critic = Critic()\n"
    "for x, y in loader:\n"
    "    critic.train()\n"
    "    loss = (critic(x) - y).pow(2).mean()\n"
    "    loss.backward()\n"
    "    critic.eval()\n"
    "    score = critic(x)\n"
)
CRITIC_WITH_DROPOUT = MLP_CRITIC.replace("nn.ReLU(), ", "nn.ReLU(), nn.Dropout(0.1), ")

# A constructor that builds its network into self, may load weights, then switches it to
# training mode (Rainbow's Agent): a module just built is in training mode already.
AGENT_CONSTRUCTOR = (
    "class Agent:\n"
    "    def __init__(self, args):\n"
    "        self.net = DQN(args).to(args.device)\n"
    "        if args.model:\n"
    "            self.net.load_state_dict(torch.load(args.model))\n"
    "        self.net.train()\n"
    "        self.optimiser = optim.Adam(self.net.parameters(), lr=args.lr)\n"
)

# A constructor that builds its network and calls a settings method only it calls, which switches
# the network to training mode (BasicSR's SRModel): nothing could have evaluated it yet.
INIT_HELPER_MODEL = (
    "class SRModel(BaseModel):\n"
    "    def __init__(self, opt):\n"
    "        self.net_g = build_network(opt)\n"
    "        if self.is_train:\n"
    "            self.init_training_settings()\n"
    "    def init_training_settings(self):\n"
    "        self.net_g.train()\n"
    "        self.optimizer_g = torch.optim.Adam(self.net_g.parameters(), lr=1e-4)\n"
)

# A library-style model class (BasicSR's SRModel): feed_data() moves the batch into attributes
# that optimize_parameters() hands to the network and to its losses, which are added into a
# total that starts at zero, one of them unpacked from a call.
SR_MODEL_STEP = (
    "class SRModel(BaseModel):\n"
    "    def feed_data(self, data):\n"
    "        self.lq = data['lq'].to(self.device)\n"
    "        self.gt = data['gt'].to(self.device)\n"
    "    def optimize_parameters(self, current_iter):\n"
    "        self.optimizer_g.zero_grad()\n"
    "        self.output = self.net_g(self.lq)\n"
    "        l_total = 0\n"
    "        l_pix = self.cri_pix(self.output, self.gt)\n"
    "        l_total += l_pix\n"
    "        l_percep, l_style = self.cri_perceptual(self.output, self.gt)\n"
    "        l_total += l_percep + l_style\n"
    "        l_total.backward()\n"
    "        self.optimizer_g.step()\n"
)

# A trainer whose own backward method is handed the loss scaled by a GradScaler, the loss coming
# out of the model's own loss method in a tuple (flair's ModelTrainer).
SCALED_HELPER_BACKWARD = (
    "class Trainer:\n"
    "    def _backward(self, loss):\n"
    "        loss.backward()\n"
    "\n"
    "    def fit_batch(self, batch, scaler):\n"
    "        loss, count = self.model.forward_loss(batch)\n"
    "        self._backward(scaler.scale(loss))\n"
)


# pytorch-accelerated's epoch loss: the floats a tracker summed, made into tensors, gathered across
# processes and averaged, then read as a number: no graph anywhere, and no training loss.
GATHERED_EPOCH_LOSS = (
    "class Trainer:\n"
    "    def gather(self, tensor):\n"
    "        return self.accelerator.gather(tensor)\n"
    "    def log_epoch_loss(self, name):\n"
    "        total = self.gather(torch.tensor(self.tracker.total_loss, device=self.device))\n"
    "        count = self.gather(torch.tensor(self.tracker.count, device=self.device))\n"
    "        average_loss = total.sum() / count.sum()\n"
    "        self.history.update_metric(name, average_loss.item())\n"
)

# DeepChem's compute_saliency: the gradient of an input, read off it row by row (a Jacobian), with
# no optimizer step: no training fault applies to it (every training operator leaves it alone).
INPUT_GRADIENT = (
    "def compute_saliency(self, x):\n"
    "    x.requires_grad_(True)\n"
    "    output = self.model(x).reshape([-1])\n"
    "    rows = []\n"
    "    for i in range(output.shape[0]):\n"
    "        output.backward(seed(i), retain_graph=True)\n"
    "        rows.append(x.grad.clone())\n"
    "        x.grad.zero_()\n"
    "    return rows\n"
)

# ClassyVision's shape: a task's train_step takes its own batch from an iterator and runs one step
# (no loop of its own: a trainer outside the file calls it once a batch), moving the batch with a
# project helper named for the GPU.
BATCH_TAKING_STEP = (
    "import torch\n"
    "class Task:\n"
    "    def train_step(self):\n"
    "        sample = next(self.data_iterator)\n"
    "        if self.use_gpu:\n"
    "            sample = recursive_copy_to_gpu(sample, non_blocking=True)\n"
    "        with self.distributed_model.no_sync():\n"
    "            loss = self.loss(self.distributed_model(sample['input']), sample['target'])\n"
    "            self.run_optimizer(loss)\n"
    "    def run_optimizer(self, loss):\n"
    "        self.optimizer.zero_grad()\n"
    "        loss.backward()\n"
    "        self.optimizer.step()\n"
)

# DAC's shape (descript-audio-codec over audiotools): an Accelerator-like object that takes the loss,
# holds the GradScaler and steps the optimizer it is handed; losses kept as entries of a dict and
# summed by configured weights. Each operator's example mutates its own fault here.
AUDIOTOOLS_STEP = (
    "from audiotools import util\n"
    "def train_loop(state, batch, accel, lambdas):\n"
    "    state.generator.train()\n"
    "    output = {}\n"
    "    batch = util.prepare_batch(batch, accel.device)\n"
    "    with accel.autocast():\n"
    "        out = state.generator(batch['signal'])\n"
    "        output['mel/loss'] = state.mel_loss(out, batch['signal'])\n"
    "        output['stft/loss'] = state.stft_loss(out, batch['signal'])\n"
    "        output['loss'] = sum([v * output[k] for k, v in lambdas.items() if k in output])\n"
    "    state.optimizer_g.zero_grad()\n"
    "    accel.backward(output['loss'])\n"
    "    accel.scaler.unscale_(state.optimizer_g)\n"
    "    accel.step(state.optimizer_g)\n"
    "    accel.update()\n"
    "    return output\n"
)

# MOON's local step (NIID-Bench): the trained net's forward beside the global net's, which no
# optimizer here steps; a contrastive term weighted and computed in a branch per `--loss`.
MOON_STEP = (
    "import torch\n"
    "from torch import optim\n"
    "\n"
    "\n"
    "def train_moon(net, global_net, loader, criterion, mu, kind, lr):\n"
    "    optimizer = optim.SGD(net.parameters(), lr=lr)\n"
    "    for x, target in loader:\n"
    "        optimizer.zero_grad()\n"
    "        _, pro1, out = net(x)\n"
    "        _, pro2, _ = global_net(x)\n"
    '        if kind == "l2norm":\n'
    "            loss2 = mu * torch.mean(torch.norm(pro2 - pro1, dim=1))\n"
    "        else:\n"
    "            loss2 = mu * criterion(pro1, pro2)\n"
    "        loss1 = criterion(out, target)\n"
    "        loss = loss1 + loss2\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)

# A trainer whose step has a helper compute the loss from the batch, the helper running the model
# in several lines (Occupancy Networks' `Trainer.compute_loss`): its input encoder, its latent
# encoder (a torch Distribution), its decoder.
LOSS_HELPER_TRAINER = (
    "import torch\n"
    "import torch.nn.functional as F\n"
    "from torch import distributions as dist\n"
    "class Trainer:\n"
    "    def train_step(self, data):\n"
    "        self.optimizer.zero_grad()\n"
    "        loss = self.compute_loss(data)\n"
    "        loss.backward()\n"
    "        self.optimizer.step()\n"
    "        return loss.item()\n"
    "    def compute_loss(self, data):\n"
    "        p = data.get('points').to(self.device)\n"
    "        occ = data.get('points.occ').to(self.device)\n"
    "        c = self.model.encode_inputs(data['inputs'])\n"
    "        q_z = self.model.infer_z(p, occ, c)\n"
    "        kl = dist.kl_divergence(q_z, self.model.p0_z).sum(dim=-1)\n"
    "        logits = self.model.decode(p, q_z.rsample(), c).logits\n"
    "        return kl.mean() + F.binary_cross_entropy_with_logits(logits, occ)\n"
)

# A GAN's generator step whose fake image may be augmented before the discriminator scores it
# (rosinality's stylegan2 `fake_img, _ = generator(noise)`, then `augment`): the generator's
# output reaches the loss only through another model.
GAN_GENERATOR_STEP = (
    "import torch\n"
    "import torch.nn.functional as F\n"
    "def generator_step(generator, discriminator, g_optimizer, z, augment):\n"
    "    fake = generator(z)\n"
    "    if augment:\n"
    "        fake = diff_augment(fake)\n"
    "    scores = discriminator(fake)\n"
    "    loss = F.softplus(-scores).mean()\n"
    "    g_optimizer.zero_grad()\n"
    "    loss.backward()\n"
    "    g_optimizer.step()\n"
)

# A loss summed from terms: one unpacked beside what its helper also returns, one computed only
# where its weight is on (SfmLearner's `loss_1, warped, diff = photometric_reconstruction_loss(
# ...)` and `if w2 > 0: loss_2 = explainability_loss(mask)`, else `loss_2 = 0`).
WEIGHTED_TERMS_STEP = (
    "import torch\n"
    "def train(disp_net, pose_net, loader, optimizer, w2):\n"
    "    for img, ref in loader:\n"
    "        disp = disp_net(img)\n"
    "        mask, pose = pose_net(img, ref)\n"
    "        loss_1, warped = photometric_loss(img, ref, disp, pose)\n"
    "        if w2 > 0:\n"
    "            loss_2 = explainability_loss(mask)\n"
    "        else:\n"
    "            loss_2 = 0\n"
    "        loss = loss_1 + w2 * loss_2\n"
    "        optimizer.zero_grad()\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)


# A term computed in an if after the loss and added into it there (cellpose's class loss).
BRANCH_ADDED_TERM_STEP = (
    "import torch\n"
    "def train(net, loader, optimizer, class_weights):\n"
    "    for X, lbl in loader:\n"
    "        y = net(X)[0]\n"
    "        loss = loss_fn_seg(lbl, y)\n"
    "        if y.shape[1] > 3:\n"
    "            loss3 = loss_fn_class(lbl, y, class_weights=class_weights)\n"
    "            loss += loss3\n"
    "        optimizer.zero_grad()\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)


# A trainer that keeps the generator's output on self in forward() for the loss backward_G()
# computes and differentiates (pytorch-CycleGAN-and-pix2pix's Pix2PixModel).
PIX2PIX_STEP = (
    "import torch\n"
    "class Pix2PixModel(BaseModel):\n"
    "    def set_input(self, batch):\n"
    "        self.real_A = batch['A'].to(self.device)\n"
    "        self.real_B = batch['B'].to(self.device)\n"
    "    def forward(self):\n"
    "        self.fake_B = self.netG(self.real_A)\n"
    "    def backward_G(self):\n"
    "        self.loss_G = self.criterionL1(self.fake_B, self.real_B) * self.opt.lambda_L1\n"
    "        self.loss_G.backward()\n"
    "    def optimize_parameters(self):\n"
    "        self.forward()\n"
    "        self.optimizer_G.zero_grad()\n"
    "        self.backward_G()\n"
    "        self.optimizer_G.step()\n"
)


# A trainer whose forward(), backward() and update() pass the outputs and the loss along on self:
# backward() computes `self.loss` and update() differentiates it (text-to-motion's trainers); the
# validation loop runs the same methods under no_grad.
STORED_LOSS_TRAINER = (
    "import torch\n"
    "class DecompTrainer(object):\n"
    "    @staticmethod\n"
    "    def zero_grad(opt_list):\n"
    "        for opt in opt_list:\n"
    "            opt.zero_grad()\n"
    "    @staticmethod\n"
    "    def step(opt_list):\n"
    "        for opt in opt_list:\n"
    "            opt.step()\n"
    "    def forward(self, batch):\n"
    "        self.motions = batch.to(self.device).float()\n"
    "        self.latents = self.movement_enc(self.motions)\n"
    "        self.recon = self.movement_dec(self.latents)\n"
    "    def backward(self):\n"
    "        self.loss_rec = self.l1_criterion(self.recon, self.motions)\n"
    "        self.loss = self.loss_rec + torch.mean(torch.abs(self.latents)) * self.opt.lambda_sparsity\n"
    "    def update(self):\n"
    "        self.zero_grad([self.opt_enc, self.opt_dec])\n"
    "        self.backward()\n"
    "        self.loss.backward()\n"
    "        self.step([self.opt_enc, self.opt_dec])\n"
    "    def train(self, train_loader, val_loader):\n"
    "        self.opt_enc = torch.optim.Adam(self.movement_enc.parameters(), lr=self.opt.lr)\n"
    "        self.opt_dec = torch.optim.Adam(self.movement_dec.parameters(), lr=self.opt.lr)\n"
    "        for batch in train_loader:\n"
    "            self.forward(batch)\n"
    "            self.update()\n"
    "        with torch.no_grad():\n"
    "            for batch in val_loader:\n"
    "                self.forward(batch)\n"
    "                self.backward()\n"
)


# A module wrapping the model that computes and returns its loss (Sockeye's ModelWithLoss): the
# trainer, in another file, differentiates what it returns.
MODEL_WITH_LOSS = (
    "class ModelWithLoss(torch.nn.Module):\n"
    "    def __init__(self, model, losses):\n"
    "        super().__init__()\n"
    "        self.model = model\n"
    "        self.losses = losses\n"
    "\n"
    "    def forward(self, source, labels):\n"
    "        outputs = self.model(source)\n"
    "        outputs = {name: output.float() for (name, output) in outputs.items()}\n"
    "        loss_values = [loss_function(outputs, labels) for loss_function in self.losses]\n"
    "        sum_losses = sum(loss_values)\n"
    "        return sum_losses, loss_values\n"
)


# ENAS' controller step: REINFORCE on sampled architectures, an entropy term added in place.
CONTROLLER_STEP = (
    "class Trainer:\n"
    "    def __init__(self, controller):\n"
    "        self.controller = controller\n"
    "        self.controller_optim = torch.optim.Adam(self.controller.parameters(), lr=3.5e-4)\n"
    "\n"
    "    def train_controller(self):\n"
    "        for step in range(self.max_step):\n"
    "            dags, log_probs, entropies = self.controller.sample(with_details=True)\n"
    "            with torch.no_grad():\n"
    "                rewards = self.get_reward(dags)\n"
    "            loss = -log_probs * (rewards - self.baseline)\n"
    "            loss -= self.entropy_coeff * entropies\n"
    "            loss = loss.sum()\n"
    "            self.controller_optim.zero_grad()\n"
    "            loss.backward()\n"
    "            self.controller_optim.step()\n"
)


# habitat's PPO update: the policy's `evaluate_actions` through a method of the class, two losses.
PPO_UPDATE = (
    "class PPO:\n"
    "    def _evaluate_actions(self, *args):\n"
    "        return self.actor_critic.evaluate_actions(*args)\n"
    "\n"
    "    def update(self, batch):\n"
    '        values, log_probs = self._evaluate_actions(batch["obs"], batch["actions"])\n'
    '        ratio = torch.exp(log_probs - batch["old_log_probs"])\n'
    '        action_loss = -(batch["advantages"] * ratio).mean()\n'
    '        value_loss = (values - batch["returns"]).pow(2).mean()\n'
    "        total_loss = value_loss + action_loss\n"
    "        total_loss.backward()\n"
)

# connectomics' trainer: the loss handed to a method that hands it to the one running the backward.
RELAYED_BACKWARD = (
    "class Trainer:\n"
    "    def train(self):\n"
    "        for i in range(self.total_iters):\n"
    "            pred = self.model(next(self.loader))\n"
    "            loss = self.criterion(pred)\n"
    "            self._train_misc(loss)\n"
    "\n"
    "    def _train_misc(self, loss):\n"
    "        self.backward_pass(loss)\n"
    "\n"
    "    def backward_pass(self, loss):\n"
    "        loss.backward()\n"
    "        self.optimizer.step()\n"
)

# PyTorch Connectomics' test(): the mode chosen by a flag, the model run by a test-time augmentor.
FLAG_CHOSEN_EVAL = (
    "def test(self):\n"
    "    self.model.eval() if self.cfg.DO_EVAL else self.model.train()\n"
    "    with torch.no_grad():\n"
    "        for volume in self.loader:\n"
    "            output = self.augmentor(self.model, volume)\n"
    "            self.write(output)\n"
)

# DeBERTa's trainer: a step retried until a flag says it ran (its fp16 optimizer skips on overflow).
RETRIED_STEP = (
    "class Trainer:\n"
    "    def train(self, loader):\n"
    "        torch.distributed.barrier()\n"
    "        for step, batch in enumerate(loader):\n"
    "            batch = batch.to(self.device)\n"
    "            self._train_step(batch)\n"
    "\n"
    "    def _train_step(self, batch):\n"
    "        done = False\n"
    "        while not done:\n"
    "            self.optimizer.zero_grad()\n"
    "            loss = self.model(batch)\n"
    "            loss.backward()\n"
    "            if not self.optimizer.step():\n"
    "                continue\n"
    "            done = True\n"
)

# DeBERTa's trainer: a default loss function kept in an attribute, its output a dict or a tuple.
DEFAULT_LOSS_FN = (
    "class Trainer:\n"
    "    def __init__(self, model, loss_fn=None):\n"
    "        def _loss_fn(trainer, model, batch):\n"
    "            _, loss = model(**batch)\n"
    '            return loss.mean(), batch["input_ids"].size(0)\n'
    "        self.loss_fn = loss_fn if loss_fn is not None else _loss_fn\n"
    "\n"
    "    def step(self, batch):\n"
    "        output = self.loss_fn(self, self.model, batch)\n"
    "        if isinstance(output, dict):\n"
    '            loss = output["loss"]\n'
    "        else:\n"
    "            loss, size = output\n"
    "        loss.backward()\n"
    "        self.optimizer.step()\n"
)

# Stanza's coreference model: a `training` property whose setter switches every module it holds.
TRAINING_PROPERTY = (
    "class CorefModel:\n"
    "    @property\n"
    "    def training(self):\n"
    "        return self._training\n"
    "\n"
    "    @training.setter\n"
    "    def training(self, value):\n"
    "        self._training = value\n"
    "        for module in self.trainable.values():\n"
    "            module.train(value)\n"
    "\n"
    "    @torch.no_grad()\n"
    "    def evaluate(self, docs):\n"
    "        self.training = False\n"
    "        return [self.run(doc) for doc in docs]\n"
    "\n"
    "    def train(self, docs):\n"
    "        for epoch in range(self.epochs):\n"
    "            self.training = True\n"
    "            for doc in docs:\n"
    "                self.optimizer.zero_grad()\n"
    "                self.loss_fn(self.run(doc)).backward()\n"
    "                self.optimizer.step()\n"
    "            self.evaluate(self.dev)\n"
)

# Stanza's coreference trainer: document ids shuffled in place, walked through a progress bar.
SHUFFLED_THROUGH_BAR = (
    "import random\n"
    "\n"
    "def train(model, docs, optimizer):\n"
    "    ids = list(range(len(docs)))\n"
    "    for epoch in range(10):\n"
    "        random.shuffle(ids)\n"
    '        pbar = tqdm(ids, unit="docs")\n'
    "        for i, doc_id in enumerate(pbar):\n"
    "            optimizer.zero_grad()\n"
    "            model(docs[doc_id]).backward()\n"
    "            optimizer.step()\n"
)

# Stanza's coreference model: BERT over padded windows, its inputs made on the device.
ENCODER_INPUTS = (
    "class Tagger(nn.Module):\n"
    "    def __init__(self, name):\n"
    "        super().__init__()\n"
    "        self.bert = BertModel(BertConfig())\n"
    "        self.head = nn.Linear(768, 9)\n"
    "\n"
    "    def embed(self, ids, pad_id):\n"
    "        mask = ids != pad_id\n"
    "        tensor = torch.tensor(ids, device=self.device)\n"
    "        out = self.bert(tensor, attention_mask=torch.tensor(mask, device=self.device))\n"
    '        return out["last_hidden_state"]\n'
    "\n"
    "    def fit(self, docs, optimizer):\n"
    "        for doc in docs:\n"
    "            optimizer.zero_grad()\n"
    "            loss = self.loss_fn(self.head(self.embed(doc.ids, 0)), doc.labels)\n"
    "            loss.backward()\n"
    "            optimizer.step()\n"
)

# MACE's LBFGS step: a closure that runs the whole epoch, its loss kept.
LBFGS_STEP = (
    "def take_step(model, optimizer, loader, loss_fn):\n"
    "    def closure():\n"
    "        optimizer.zero_grad()\n"
    "        total = 0.0\n"
    "        for x, y in loader:\n"
    "            loss = loss_fn(model(x), y)\n"
    "            loss.backward()\n"
    "            total += loss.item()\n"
    "        return total\n"
    "\n"
    "    loss = optimizer.step(closure)\n"
    "    return loss\n"
)

# PyDreamer: the losses a model's training_step returns, each backpropagated in a loop.
WALKED_LOSSES = (
    "for step in range(steps):\n"
    "    batch = next(data)\n"
    "    losses, state, metrics = model.training_step(batch, state)\n"
    "    for opt in optimizers:\n"
    "        opt.zero_grad()\n"
    "    for loss in losses:\n"
    "        scaler.scale(loss).backward()\n"
    "    for opt in optimizers:\n"
    "        scaler.step(opt)\n"
    "    scaler.update()\n"
)

# generative-recommenders: a project's loader helper unpacked into the training sampler and loader.
LOADER_HELPER = (
    "from .data import create_data_loader\n"
    "\n"
    "def train(model, dataset, optimizer, rank, world_size):\n"
    "    train_sampler, train_loader = create_data_loader(dataset.train, batch_size=64, rank=rank, shuffle=True)\n"
    "    for epoch in range(10):\n"
    "        for batch in train_loader:\n"
    "            optimizer.zero_grad()\n"
    "            model(batch).backward()\n"
    "            optimizer.step()\n"
)

# Stanza's coreference trainer: named loss terms summed where they are differentiated.
INLINE_SUM = (
    "for doc in docs:\n"
    "    optimizer.zero_grad()\n"
    "    res = model(doc)\n"
    "    c_loss = coref_criterion(res.coref_scores, res.coref_y)\n"
    "    s_loss = span_criterion(res.span_scores, res.span_y)\n"
    "    (c_loss + s_loss).backward()\n"
    "    optimizer.step()\n"
)

# awesome-semantic-segmentation-pytorch: a project's sampler helper bound as the training sampler.
SAMPLER_HELPER = (
    "from core.data import make_data_sampler\n"
    "\n"
    "\n"
    "def train(model, dataset, optimizer, args):\n"
    "    train_sampler = make_data_sampler(dataset, shuffle=True, distributed=args.distributed)\n"
    "    loader = DataLoader(dataset, batch_sampler=BatchSampler(train_sampler, 8, True))\n"
    "    for images, targets in loader:\n"
    "        optimizer.zero_grad()\n"
    "        model(images, targets).backward()\n"
    "        optimizer.step()\n"
)

# TorchBeast's learn(): an optimizer handed in, built by the caller over the model it hands on under another name.
HANDED_OPTIMIZER_STEP = (
    "import torch\n"
    "import torch.nn.functional as F\n"
    "\n"
    "\n"
    "def learn(flags, actor_model, model, batch, optimizer):\n"
    "    outputs, _ = model(batch)\n"
    "    outputs = {key: tensor[:-1] for key, tensor in outputs.items()}\n"
    '    rewards = batch["reward"]\n'
    "    if flags.reward_clipping:\n"
    "        rewards = torch.clamp(rewards, -1, 1)\n"
    '    loss = F.mse_loss(outputs["baseline"], rewards)\n'
    "    optimizer.zero_grad()\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
    "    actor_model.load_state_dict(model.state_dict())\n"
    "\n"
    "\n"
    "def train(flags, model, learner_model, loader):\n"
    "    optimizer = torch.optim.RMSprop(learner_model.parameters(), lr=flags.lr)\n"
    "    for batch in loader:\n"
    "        learn(flags, model, learner_model, batch, optimizer)\n"
)

# TorchBeast's entropy bonus: a loss helper that normalises its logits itself, over their last axis.
ENTROPY_HELPER = (
    "import torch\n"
    "import torch.nn.functional as F\n"
    "\n"
    "\n"
    "def entropy_loss(logits):\n"
    "    policy = F.softmax(logits, dim=-1)\n"
    "    return (policy * F.log_softmax(logits, dim=-1)).sum()\n"
    "\n"
    "\n"
    "def step(model, batch, optimizer):\n"
    "    out = model(batch)\n"
    '    loss = entropy_loss(out["policy_logits"])\n'
    "    loss.backward()\n"
    "    optimizer.step()\n"
)

# OpenPrompt's runner: a criterion defaulting to what a method of the file builds by a setting.
DEFAULT_CRITERION_METHOD = (
    "import torch\n"
    "\n"
    "\n"
    "class Runner:\n"
    "    def __init__(self, model, config, loss_function=None):\n"
    "        self.model = model\n"
    "        self.config = config\n"
    "        self.loss_function = loss_function if loss_function else self.configure_loss_function()\n"
    "\n"
    "    def configure_loss_function(self):\n"
    '        if self.config.loss == "cross_entropy":\n'
    "            return torch.nn.CrossEntropyLoss()\n"
    "        return torch.nn.NLLLoss()\n"
    "\n"
    "    def training_step(self, batch):\n"
    "        logits = self.model(batch)\n"
    '        return self.loss_function(logits, batch["label"])\n'
)

# AST's traintest: a model wrapped in DataParallel unless it is one, a criterion tested with isinstance.
DATA_PARALLEL_UNLESS_WRAPPED = (
    "import torch\n"
    "from torch import nn\n"
    "\n"
    "\n"
    "def train(audio_model, train_loader, args, device):\n"
    "    if not isinstance(audio_model, nn.DataParallel):\n"
    "        audio_model = nn.DataParallel(audio_model)\n"
    "    audio_model = audio_model.to(device)\n"
    "    optimizer = torch.optim.Adam(audio_model.parameters(), args.lr)\n"
    '    if args.loss == "BCE":\n'
    "        loss_fn = nn.BCEWithLogitsLoss()\n"
    "    else:\n"
    "        loss_fn = nn.CrossEntropyLoss()\n"
    "    for audio_input, labels in train_loader:\n"
    "        batch_size = audio_input.size(0)\n"
    "        audio_input = audio_input.to(device, non_blocking=True)\n"
    "        labels = labels.to(device, non_blocking=True)\n"
    "        audio_output = audio_model(audio_input)\n"
    "        if isinstance(loss_fn, torch.nn.CrossEntropyLoss):\n"
    "            loss = loss_fn(audio_output, torch.argmax(labels.long(), axis=1))\n"
    "        else:\n"
    "            loss = loss_fn(audio_output, labels)\n"
    "        optimizer.zero_grad()\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)

# OpenPrompt's runner: device strings formatted with the rank (`.format`, an f-string).
RANK_DEVICE_STRINGS = (
    "def training_epoch(self, loader):\n"
    "    for batch in loader:\n"
    '        batch = batch.to("cuda:{}".format(self.config.local_rank)).to_dict()\n'
    '        inputs = inputs.to(f"cuda:{self.config.local_rank}")\n'
    "        loss = self.model(batch, inputs)\n"
    "        loss.backward()\n"
)

# TGN's training script: labels made on the device for the criterion, beside a constant added to the loss.
TARGETS_ON_DEVICE = (
    "import torch\n"
    "\n"
    "criterion = torch.nn.BCELoss()\n"
    "model = TGN(features).to(device)\n"
    "optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)\n"
    "for batch in batches:\n"
    "    optimizer.zero_grad()\n"
    "    with torch.no_grad():\n"
    "        pos_label = torch.ones(len(batch), dtype=torch.float, device=device)\n"
    "        neg_label = torch.zeros(len(batch), dtype=torch.float, device=device)\n"
    "        offset = torch.zeros(1, device=device)\n"
    "    pos_prob, neg_prob = model(batch)\n"
    "    loss = criterion(pos_prob.squeeze(), pos_label) + criterion(neg_prob.squeeze(), neg_label) + offset\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
)

# TGN's training script: a model at module level, known by the parameters it hands the optimizer.
SCRIPT_LEVEL_MODEL = (
    "import torch\n"
    "\n"
    "tgn = TGN(neighbor_finder=finder, device=device)\n"
    "optimizer = torch.optim.Adam(tgn.parameters(), lr=1e-4)\n"
    "tgn = tgn.to(device)\n"
    "for batch in batches:\n"
    "    optimizer.zero_grad()\n"
    "    loss = tgn.loss(batch.to(device))\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
)

# DiffDock's training utilities: a step handed the loss function the file defines and never calls itself.
HANDED_LOSS_FUNCTION = (
    "import torch.nn.functional as F\n"
    "\n"
    "\n"
    "def loss_function(pred, data, device):\n"
    "    target = data.y.to(device)\n"
    "    return F.mse_loss(pred, target)\n"
    "\n"
    "\n"
    "def train_epoch(model, loader, optimizer, device, loss_fn):\n"
    "    model.train()\n"
    "    for data in loader:\n"
    "        optimizer.zero_grad()\n"
    "        pred = model(data)\n"
    "        loss = loss_fn(pred, data=data, device=device)\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)

# DiffDock's loss function: weighted terms summed and returned first in a tuple the step indexes.
LOSS_TUPLE_HELPER = (
    "import torch\n"
    "\n"
    "\n"
    "def loss_function(tr_pred, rot_pred, data, tr_weight=0.5, apply_mean=True):\n"
    "    mean_dims = (0, 1) if apply_mean else 1\n"
    "    tr_loss = ((tr_pred - data.tr_score) ** 2).mean(dim=mean_dims)\n"
    "    rot_loss = ((rot_pred - data.rot_score) ** 2).mean(dim=mean_dims)\n"
    "    loss = tr_loss * tr_weight + rot_loss * (1 - tr_weight)\n"
    "    return loss, tr_loss.detach(), rot_loss.detach()\n"
    "\n"
    "\n"
    "def train_epoch(model, loader, optimizer, loss_fn):\n"
    "    model.train()\n"
    "    for data in loader:\n"
    "        optimizer.zero_grad()\n"
    "        tr_pred, rot_pred = model(data)\n"
    "        loss_tuple = loss_fn(tr_pred, rot_pred, data=data)\n"
    "        loss = loss_tuple[0]\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)

# A loss helper whose optional term runs only under a flag no training caller passes (DiffDock's,
# cmgan's helpers), summed over lines inside parentheses.
OPTIONAL_TERM_HELPER = (
    "def compute_loss(model, batch, use_aux=False):\n"
    "    out = model(batch.x)\n"
    "    rec_loss = (out - batch.y).abs().mean()\n"
    "    if use_aux:\n"
    "        kl_loss = model.kl()\n"
    "    else:\n"
    "        kl_loss = 0.0\n"
    "    loss = (\n"
    "        rec_loss\n"
    "        + 0.1 * kl_loss\n"
    "    )\n"
    "    return loss\n"
    "\n"
    "\n"
    "def train(model, loader, optimizer):\n"
    "    for batch in loader:\n"
    "        optimizer.zero_grad()\n"
    "        loss = compute_loss(model, batch)\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)

# UNITER's fine-tuning step: apex's loss-scaling context around the backward, a meter called with the value.
APEX_CONTEXT_STEP = (
    "from apex import amp\n"
    "\n"
    "\n"
    "def train(model, loader, optimizer):\n"
    "    running_loss = RunningMeter('loss')\n"
    "    model.train()\n"
    "    for step, batch in enumerate(loader):\n"
    "        loss = model(batch, compute_loss=True)\n"
    "        loss = loss.mean() * batch['targets'].size(1)\n"
    "        with amp.scale_loss(loss, optimizer) as scaled_loss:\n"
    "            scaled_loss.backward()\n"
    "        running_loss(loss.item())\n"
    "        optimizer.step()\n"
    "        optimizer.zero_grad()\n"
)

# PyMIC's segmentation agent: a batch's optional entry moved into the dict its loss is handed.
LOSS_DICT_AGENT = (
    "class Agent:\n"
    "    def get_loss_value(self, data, pred, gt):\n"
    "        loss_input_dict = {'prediction': pred, 'ground_truth': gt}\n"
    "        device = pred.device\n"
    "        pixel_weight = data.get('pixel_weight', None)\n"
    "        if pixel_weight is not None:\n"
    "            loss_input_dict['pixel_weight'] = pixel_weight.to(device)\n"
    "        return self.loss_calculator(loss_input_dict)\n"
    "\n"
    "    def training(self, loader):\n"
    "        self.net.train()\n"
    "        for data in loader:\n"
    "            inputs, labels = data['image'].to(self.device), data['label'].to(self.device)\n"
    "            self.optimizer.zero_grad()\n"
    "            outputs = self.net(inputs)\n"
    "            loss = self.get_loss_value(data, outputs, labels)\n"
    "            loss.backward()\n"
    "            self.optimizer.step()\n"
)

# KnowledgeGraphEmbedding's train_step: scores reworked in place, terms reduced by hand in either branch.
KGE_TRAIN_STEP = (
    "import torch.nn.functional as F\n"
    "\n"
    "\n"
    "def train_step(model, optimizer, batch, args):\n"
    "    model.train()\n"
    "    optimizer.zero_grad()\n"
    "    positive, negative, weight = batch\n"
    "    negative_score = model(negative)\n"
    "    negative_score = F.logsigmoid(-negative_score).mean(dim=1)\n"
    "    positive_score = F.logsigmoid(model(positive)).squeeze(dim=1)\n"
    "    if args.uni_weight:\n"
    "        positive_loss = -positive_score.mean()\n"
    "        negative_loss = -negative_score.mean()\n"
    "    else:\n"
    "        positive_loss = -(weight * positive_score).sum() / weight.sum()\n"
    "        negative_loss = -(weight * negative_score).sum() / weight.sum()\n"
    "    loss = (positive_loss + negative_loss) / 2\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
)

# VISSL's standard train step: a context chosen by phase, a GradScaler the task object holds.
PHASE_CONTEXT_STEP = (
    "import torch\n"
    "\n"
    "\n"
    "class StandardTrainStep:\n"
    "    def __call__(self, task):\n"
    "        grad_context = torch.enable_grad() if task.train else torch.no_grad()\n"
    "        with grad_context:\n"
    "            output = task.model(task.sample)\n"
    "            loss = task.loss(output, task.target)\n"
    "        if task.train:\n"
    "            self.run_backward(task, loss)\n"
    "            self.run_optimizer_step(task)\n"
    "\n"
    "    @staticmethod\n"
    "    def run_backward(task, loss):\n"
    "        task.optimizer.zero_grad()\n"
    "        task.amp_grad_scaler.scale(loss).backward()\n"
    "\n"
    "    @staticmethod\n"
    "    def run_optimizer_step(task):\n"
    "        task.amp_grad_scaler.step(task.optimizer, where=task.where)\n"
    "        task.amp_grad_scaler.update()\n"
)

# A SAC actor update (rl_games'): a reparameterised draw and its log-probability, both from one distribution.
SAC_ACTOR_UPDATE = (
    "import torch\n"
    "\n"
    "\n"
    "def update_actor(self, obs):\n"
    "    dist = self.actor(obs)\n"
    "    action = dist.rsample()\n"
    "    log_prob = dist.log_prob(action).sum(-1, keepdim=True)\n"
    "    actor_q1, actor_q2 = self.critic(obs, action)\n"
    "    actor_q = torch.min(actor_q1, actor_q2)\n"
    "    actor_loss = (self.alpha.detach() * log_prob - actor_q).mean()\n"
    "    self.actor_optimizer.zero_grad()\n"
    "    actor_loss.backward()\n"
    "    self.actor_optimizer.step()\n"
)

# KnowledgeGraphEmbedding's L3 regulariser: a term on the model's weights added as `loss = loss + term` under a flag.
REGULARISED_STEP = (
    "def train_step(model, optimizer, batch, args):\n"
    "    optimizer.zero_grad()\n"
    "    score = model(batch)\n"
    "    loss = -score.mean()\n"
    "    if args.regularization != 0.0:\n"
    "        regularization = args.regularization * (model.entity_embedding.norm(p=3) ** 3)\n"
    "        loss = loss + regularization\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
)

# torch-lr-finder's LRFinder: a method moving a step's parts through a nested move function, returning them in order.
MOVE_METHOD_STEP = (
    "class LRFinder:\n"
    "    def _move_to_device(self, inputs, labels, non_blocking=True):\n"
    "        def move(obj, device, non_blocking=True):\n"
    '            if hasattr(obj, "to"):\n'
    "                return obj.to(device, non_blocking=non_blocking)\n"
    "            elif isinstance(obj, tuple):\n"
    "                return tuple(move(o, device, non_blocking) for o in obj)\n"
    "            return obj\n"
    "\n"
    "        inputs = move(inputs, self.device, non_blocking=non_blocking)\n"
    "        labels = move(labels, self.device, non_blocking=non_blocking)\n"
    "        return inputs, labels\n"
    "\n"
    "    def _train_batch(self, train_iter, accumulation_steps):\n"
    "        self.optimizer.zero_grad()\n"
    "        for i in range(accumulation_steps):\n"
    "            inputs, labels = next(train_iter)\n"
    "            inputs, labels = self._move_to_device(inputs, labels, non_blocking=True)\n"
    "            loss = self.criterion(self.model(inputs), labels)\n"
    "            loss.backward()\n"
    "        self.optimizer.step()\n"
)

# once-for-all's RunManager: a distillation term chosen by kind in a nested branch, added as `loss = w * kd_loss + loss`.
DISTILLATION_BRANCH_STEP = (
    "import torch\n"
    "import torch.nn.functional as F\n"
    "\n"
    "\n"
    "def train_one_epoch(self, args, loader):\n"
    "    for images, labels in loader:\n"
    "        if args.teacher_model is not None:\n"
    "            with torch.no_grad():\n"
    "                soft_logits = args.teacher_model(images).detach()\n"
    "                soft_label = F.softmax(soft_logits, dim=1)\n"
    "        output = self.net(images)\n"
    "        loss = self.train_criterion(output, labels)\n"
    "        if args.teacher_model is not None:\n"
    '            if args.kd_type == "ce":\n'
    "                kd_loss = cross_entropy_loss_with_soft_target(output, soft_label)\n"
    "            else:\n"
    "                kd_loss = F.mse_loss(output, soft_logits)\n"
    "            loss = args.kd_ratio * kd_loss + loss\n"
    "        self.net.zero_grad()\n"
    "        loss.backward()\n"
    "        self.optimizer.step()\n"
)

# OpenPrompt's runner: schedulers stepped in a loop beside the optimizers' steps in the accumulation branch.
SCHEDULER_LOOP_IN_BRANCH = (
    "def training_epoch(self, loader):\n"
    "    for batch_idx, batch in enumerate(loader):\n"
    "        loss = self.model(batch)\n"
    "        loss.backward()\n"
    "        if (batch_idx + 1) % self.config.accumulation == 0:\n"
    "            for optimizer in self.optimizers:\n"
    "                optimizer.step()\n"
    "            for scheduler in self.schedulers:\n"
    "                scheduler.step()\n"
    "            for optimizer in self.optimizers:\n"
    "                optimizer.zero_grad()\n"
)

# nerfstudio's Trainer: a project object holding the optimizers, zeroing and stepping some of them.
OPTIMIZERS_OBJECT = (
    "import torch\n"
    "\n"
    "\n"
    "class Optimizers:\n"
    "    def __init__(self, config, param_groups):\n"
    "        self.optimizers = {g: torch.optim.Adam(p, lr=config[g]) for g, p in param_groups.items()}\n"
    "\n"
    "    def zero_grad_some(self, groups):\n"
    "        for group in groups:\n"
    "            self.optimizers[group].zero_grad()\n"
    "\n"
    "    def optimizer_scaler_step_some(self, grad_scaler, groups):\n"
    "        for group in groups:\n"
    "            grad_scaler.step(self.optimizers[group])\n"
    "\n"
    "\n"
    "class Trainer:\n"
    "    def __init__(self, pipeline, config):\n"
    "        self.pipeline = pipeline\n"
    "        self.optimizers = self.setup_optimizers(config)\n"
    "        self.grad_scaler = torch.cuda.amp.GradScaler()\n"
    "\n"
    "    def setup_optimizers(self, config):\n"
    "        return Optimizers(config, self.pipeline.get_param_groups())\n"
    "\n"
    "    def train_iteration(self, step):\n"
    '        self.optimizers.zero_grad_some(["fields"])\n'
    "        loss = self.pipeline.get_train_loss(step)\n"
    "        self.grad_scaler.scale(loss).backward()\n"
    '        self.optimizers.optimizer_scaler_step_some(self.grad_scaler, ["fields"])\n'
    "        self.grad_scaler.update()\n"
)

# torchbearer's Trial: a library object (no module) whose own train()/eval() switch the model it
# holds in a state mapping, its optimizer stepped with a closure, its test pass run through an
# imported forward helper under no_grad.
TRIAL_LIBRARY = (
    "import torch\n"
    "import torchbearer\n"
    "from torchbearer.bases import _forward_with_exceptions\n"
    "\n"
    "\n"
    "class Trial(object):\n"
    "    def __init__(self, model, optimizer):\n"
    "        self.state = {torchbearer.MODEL: model, torchbearer.OPTIMIZER: optimizer}\n"
    "\n"
    "    def _fit_pass(self, state):\n"
    "        self.train()\n"
    "        for batch in state[torchbearer.GENERATOR]:\n"
    "            state[torchbearer.OPTIMIZER].step(lambda: self.closure(state))\n"
    "\n"
    "    def _test_pass(self, state):\n"
    "        with torch.no_grad():\n"
    "            for batch in state[torchbearer.GENERATOR]:\n"
    "                _forward_with_exceptions(torchbearer.X, torchbearer.MODEL, torchbearer.Y_PRED, state)\n"
    "\n"
    "    def _validation_pass(self, state):\n"
    "        self.eval()\n"
    "        self._test_pass(state)\n"
    "        self.train()\n"
    "\n"
    "    def train(self):\n"
    "        self.state[torchbearer.MODEL].train()\n"
    "        return self\n"
    "\n"
    "    def eval(self):\n"
    "        self.state[torchbearer.MODEL].eval()\n"
    "        return self\n"
)

# pytorch-seq2seq's SupervisedTrainer: the loss is an object that accumulates one term per decoding
# step (`loss.eval_batch(step_output, target)`) and backpropagates itself.
LOSS_OBJECT_TRAINER = (
    "import torch\n"
    "\n"
    "\n"
    "class SupervisedTrainer:\n"
    "    def __init__(self, loss, optimizer):\n"
    "        self.loss = loss\n"
    "        self.optimizer = optimizer\n"
    "\n"
    "    def _train_batch(self, inputs, targets, model):\n"
    "        loss = self.loss\n"
    "        outputs, hidden = model(inputs, targets)\n"
    "        loss.reset()\n"
    "        for step, step_output in enumerate(outputs):\n"
    "            loss.eval_batch(step_output, targets[:, step + 1])\n"
    "        model.zero_grad()\n"
    "        loss.backward()\n"
    "        self.optimizer.step()\n"
    "        return loss.get_loss()\n"
)

# UER-py's trainers: the base's loop backpropagates what each target's subclass returns, a sum of
# the terms its model hands back, rescaled for accumulation.
TARGET_TRAINERS = (
    "class Trainer:\n"
    "    def train(self, model, loader, optimizer):\n"
    "        model.train()\n"
    "        for batch in loader:\n"
    "            loss = self.forward_propagation(batch, model)\n"
    "            loss.backward()\n"
    "            optimizer.step()\n"
    "            model.zero_grad()\n"
    "\n"
    "\n"
    "class MlmTrainer(Trainer):\n"
    "    def forward_propagation(self, batch, model):\n"
    "        src, tgt, seg = batch\n"
    "        loss_info = model(src, tgt, seg)\n"
    "        loss, correct, denominator = loss_info\n"
    "        self.total_loss += loss.item()\n"
    "        loss = loss / self.accumulation_steps\n"
    "        return loss\n"
    "\n"
    "\n"
    "class BertTrainer(Trainer):\n"
    "    def forward_propagation(self, batch, model):\n"
    "        src, tgt_mlm, tgt_sp, seg = batch\n"
    '        loss_info = model(src, {"mlm": tgt_mlm, "sp": tgt_sp}, seg)\n'
    '        loss_mlm, correct_mlm, denominator = loss_info["mlm"]\n'
    '        loss_sp, correct_sp = loss_info["sp"]\n'
    "        loss = loss_mlm + loss_sp\n"
    "        loss = loss / self.accumulation_steps\n"
    "        return loss\n"
)

# once-for-all's RunManager: validate() switches a local bound to the trainer's model (wrapped in
# DataParallel) to eval; the epoch's own `self.net.train()` switches it back.
ALIASED_VALIDATION = (
    "class Runner:\n"
    "    def __init__(self, net):\n"
    "        self.net = net\n"
    "    def validate(self, net=None):\n"
    "        if net is None:\n"
    "            net = self.net\n"
    "        net = nn.DataParallel(net)\n"
    "        net.eval()\n"
    "        return evaluate(net)\n"
    "    def train_one_epoch(self, loader, optimizer):\n"
    "        self.net.train()\n"
    "        for x, y in loader:\n"
    "            loss = self.net(x, y)\n"
    "            loss.backward()\n"
    "            optimizer.step()\n"
    "    def train(self, loader, optimizer):\n"
    "        for epoch in range(3):\n"
    "            self.train_one_epoch(loader, optimizer)\n"
    "            self.validate()\n"
)

# torch-lr-finder's LRFinder: the criterion its caller hands in, scoring a model's outputs against
# class labels.
HANDED_CRITERION_FINDER = (
    "class Finder:\n"
    "    def __init__(self, model, optimizer, criterion):\n"
    "        self.model = model\n"
    "        self.criterion = criterion\n"
    "    def _train_batch(self, inputs, labels):\n"
    "        outputs = self.model(inputs)\n"
    "        return self.criterion(outputs, labels)\n"
)

# pretrain-gnns' context prediction: two models, each with its optimizer, stepped after one backward.
TWO_MODEL_STEP = (
    "import torch\n"
    "import torch.nn as nn\n"
    "\n"
    "criterion = nn.BCEWithLogitsLoss()\n"
    "\n"
    "\n"
    "def train(model_a, model_b, loader, opt_a, opt_b):\n"
    "    for batch in loader:\n"
    "        rep_a = model_a(batch.x_a)[batch.center]\n"
    "        rep_b = model_b(batch.x_b)\n"
    "        rows = torch.cat([rep_a[i].repeat((batch.size[i], 1)) for i in range(len(rep_a))])\n"
    "        pred_pos = torch.sum(rows * rep_b, dim=1)\n"
    "        pred_neg = torch.sum(rep_a.repeat((2, 1)) * rep_b.flip(0), dim=1)\n"
    "        loss = criterion(pred_pos, batch.y) + criterion(pred_neg, 1 - batch.y)\n"
    "        opt_a.zero_grad()\n"
    "        opt_b.zero_grad()\n"
    "        loss.backward()\n"
    "        opt_a.step()\n"
    "        opt_b.step()\n"
    "\n"
    "\n"
    "def main(model_a, model_b, loader):\n"
    "    opt_a = torch.optim.Adam(model_a.parameters())\n"
    "    opt_b = torch.optim.Adam(model_b.parameters())\n"
    "    train(model_a, model_b, loader, opt_a, opt_b)\n"
)

# ElegantRL's AgentPPO: each update's objectives computed, handed with an optimizer to the class's
# step helper, and returned as floats that update_net appends to its histories.
ELEGANTRL_UPDATE = (
    "class AgentPPO:\n"
    "    def update_net(self, buffer):\n"
    "        objs_critic, objs_actor = [], []\n"
    "        for _ in range(self.update_times):\n"
    "            obj_critic, obj_actor = self.update_objectives(buffer)\n"
    "            objs_critic.append(obj_critic)\n"
    "            objs_actor.append(obj_actor)\n"
    "        return np.mean(objs_critic), np.mean(objs_actor)\n"
    "\n"
    "    def update_objectives(self, buffer):\n"
    "        states, actions, logprobs, advantages, reward_sums = buffer\n"
    "        ids = torch.randint(len(states), size=(self.batch_size,))\n"
    "        value = self.cri(states[ids]).squeeze(1)\n"
    "        obj_critic = self.criterion(value, reward_sums[ids]).mean()\n"
    "        self.optimizer_backward(self.cri_optimizer, obj_critic)\n"
    "        new_logprob, entropy = self.act.get_logprob_entropy(states[ids], actions[ids])\n"
    "        ratio = (new_logprob - logprobs[ids]).exp()\n"
    "        obj_surrogate = (advantages[ids] * ratio).mean()\n"
    "        obj_entropy = entropy.mean()\n"
    "        obj_actor = obj_surrogate + obj_entropy * self.lambda_entropy\n"
    "        self.optimizer_backward(self.act_optimizer, -obj_actor)\n"
    "        return obj_critic.item(), obj_surrogate.item()\n"
    "\n"
    "    def optimizer_backward(self, optimizer, objective):\n"
    "        optimizer.zero_grad()\n"
    "        objective.backward()\n"
    "        optimizer.step()\n"
)

# Darts' PLForecastingModule: the optimizer built from the class and keyword arguments the user gave,
# the scheduler's Lightning config written apart and merged with it on return.
FORECASTING_OPTIMIZERS = (
    "class ForecastingModule(pl.LightningModule):\n"
    "    def configure_optimizers(self):\n"
    "        def _create_from_cls_and_kwargs(cls, kws):\n"
    "            return cls(**kws)\n"
    "\n"
    "        optimizer_kws = {k: v for k, v in self.optimizer_kwargs.items()}\n"
    '        optimizer_kws["params"] = self.parameters()\n'
    "        optimizer = _create_from_cls_and_kwargs(self.optimizer_cls, optimizer_kws)\n"
    "        sched = self.lr_scheduler_cls(optimizer, **self.lr_scheduler_kwargs)\n"
    '        lr_config_params = {"monitor": "val_loss", "interval": "epoch", "frequency": 1}\n'
    '        return [optimizer], dict({"scheduler": sched}, **lr_config_params)\n'
)

# ElegantRL's AgentBase: one method zeroes, differentiates and steps whichever optimizer and objective
# each update hands it.
SHARED_STEP_HELPER = (
    "class Agent:\n"
    "    def optimizer_backward(self, optimizer, objective):\n"
    "        optimizer.zero_grad()\n"
    "        objective.backward()\n"
    "        optimizer.step()\n"
    "    def update(self, state, target):\n"
    "        obj_critic = ((self.cri(state) - target) ** 2).mean()\n"
    "        self.optimizer_backward(self.cri_optimizer, obj_critic)\n"
    "        obj_actor = self.cri(self.act(state)).mean()\n"
    "        self.optimizer_backward(self.act_optimizer, -obj_actor)\n"
)

# pytorch-forecasting's BaseModel: the step's log (the loss among its entries) kept for the epoch's end
# through a project helper that detaches a whole log.
LOGGED_STEP = (
    "from lightning.pytorch import LightningModule\n"
    "class BaseModel(LightningModule):\n"
    "    def step(self, x, y, batch_idx):\n"
    "        out = self(x)\n"
    "        loss = self.loss(out, y)\n"
    '        log = {"loss": loss, "n_samples": x.size(0)}\n'
    "        return log, out\n"
    "    def training_step(self, batch, batch_idx):\n"
    "        x, y = batch\n"
    "        log, out = self.step(x, y, batch_idx)\n"
    "        self.training_step_outputs.append(detach(log))\n"
    "        return log\n"
)

# FAIR-Chem's OCPTrainer: the predictions a method fills into a dict by target, then the loss from them.
KEYED_PREDICTIONS = (
    "class Trainer:\n"
    "    def _forward(self, batch):\n"
    "        out = self.model(batch)\n"
    "        outputs = {}\n"
    "        for key in self.targets:\n"
    "            outputs[key] = out[key].view(len(batch), -1)\n"
    "        return outputs\n"
    "    def train(self, loader):\n"
    "        for batch in loader:\n"
    "            out = self._forward(batch)\n"
    "            loss = self._compute_loss(out, batch)\n"
    "            loss.backward()\n"
    "            self.optimizer.step()\n"
)

# A prototypical network's episode (learn2learn's ProtoNet example): one forward, split into the
# support set's prototypes and the queries, each its own path to the loss the loop differentiates.
PROTONET_EPISODE = (
    "def fast_adapt(model, batch, ways, shot):\n"
    "    data, labels = batch\n"
    "    embeddings = model(data)\n"
    "    support = embeddings[support_indices]\n"
    "    support = support.reshape(ways, shot, -1).mean(dim=1)\n"
    "    query = embeddings[query_indices]\n"
    "    logits = pairwise_distances_logits(query, support)\n"
    "    loss = F.cross_entropy(logits, labels)\n"
    "    return loss, accuracy(logits, labels)\n"
    "\n"
    "\n"
    "def train(model, loader, optimizer):\n"
    "    for batch in loader:\n"
    "        loss, acc = fast_adapt(model, batch, 5, 1)\n"
    "        optimizer.zero_grad()\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)

# A library's variational step (Pyro's SVI.step): a loss that runs its own backward, an optimizer
# wrapper called with the parameters it found, and a function that zeroes their gradients.
PYRO_SVI_STEP = (
    "class SVI:\n"
    "    def step(self, *args):\n"
    "        loss = self.loss_and_grads(self.model, self.guide, *args)\n"
    "        self.optim(params)\n"
    "        pyro.infer.util.zero_grads(params)\n"
    "        return loss\n"
)

# A VAE whose forward computes the ELBO's terms and returns them for the loop to weigh and add up
# (the shape of torchsde's latent SDE: `log_pxs, log_ratio = latent_sde(xs, ts, ...)`).
FORWARD_TERMS_STEP = (
    "import torch\n"
    "from torch import nn\n"
    "from torch.distributions import Normal, kl_divergence\n"
    "class VAE(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.encoder = nn.Linear(8, 4)\n"
    "        self.decoder = nn.Linear(2, 8)\n"
    "    def forward(self, x):\n"
    "        mean, log_std = self.encoder(x).chunk(2, dim=1)\n"
    "        qz = Normal(mean, log_std.exp())\n"
    "        log_px = Normal(self.decoder(qz.rsample()), 1.0).log_prob(x).sum(dim=1).mean(dim=0)\n"
    "        kl = kl_divergence(qz, Normal(0.0, 1.0)).sum(dim=1).mean(dim=0)\n"
    "        return log_px, kl\n"
    "def train(loader, beta):\n"
    "    model = VAE()\n"
    "    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)\n"
    "    for x in loader:\n"
    "        optimizer.zero_grad()\n"
    "        log_px, kl = model(x)\n"
    "        loss = -log_px + beta * kl\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)

# A module-level warm-up helper that rewrites the global optimizer's rates before every batch (Horovod's ImageNet
# example).
GLOBAL_RATE_HELPER = (
    "import torch\n"
    "optimizer = torch.optim.SGD(model.parameters(), lr=args.base_lr)\n"
    "def adjust_learning_rate(epoch, batch_idx):\n"
    "    for param_group in optimizer.param_groups:\n"
    "        param_group['lr'] = args.base_lr * warmup(epoch, batch_idx)\n"
    "def train(epoch):\n"
    "    for batch_idx, (data, target) in enumerate(train_loader):\n"
    "        adjust_learning_rate(epoch, batch_idx)\n"
    "        optimizer.zero_grad()\n"
    "        F.cross_entropy(model(data), target).backward()\n"
    "        optimizer.step()\n"
)

# A project scheduler that warms up to a peak rate of its own and never reads the optimizer's (OpenFold's
# AlphaFoldLRScheduler).
OWN_PEAK_SCHEDULER = (
    "import torch\n"
    "class WarmupScheduler(torch.optim.lr_scheduler._LRScheduler):\n"
    "    def __init__(self, optimizer, last_epoch=-1, max_lr=0.001, warmup=1000):\n"
    "        self.max_lr = max_lr\n"
    "        self.warmup = warmup\n"
    "        super().__init__(optimizer, last_epoch=last_epoch)\n"
    "    def get_lr(self):\n"
    "        scale = min(1.0, (self.last_epoch + 1) / self.warmup)\n"
    "        return [self.max_lr * scale for _ in self.optimizer.param_groups]\n"
    "def configure(model, learning_rate=1e-3):\n"
    "    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)\n"
    "    scheduler = WarmupScheduler(optimizer)\n"
    "    return optimizer, scheduler\n"
)

# Sub-batches whose losses are divided in place before their backwards (Horovod's ImageNet example).
SUB_BATCH_RESCALE = (
    "import torch\n"
    "def train(model, loader, optimizer, k):\n"
    "    for data, target in loader:\n"
    "        optimizer.zero_grad()\n"
    "        for part, labels in zip(data.chunk(k), target.chunk(k)):\n"
    "            loss = F.cross_entropy(model(part), labels)\n"
    "            loss.div_(k)\n"
    "            loss.backward()\n"
    "        optimizer.step()\n"
)

# A trainer that hands the step to the model's own optimize() (Coqui's Trainer).
MODEL_OWN_OPTIMIZE = (
    "import torch\n"
    "class Trainer:\n"
    "    def train_step(self, batch):\n"
    '        with torch.autocast(device_type="cuda", enabled=self.mixed_precision):\n'
    "            outputs, losses = self.model.optimize(batch, self)\n"
    "        return outputs, losses\n"
)

# A per-step scheduler guarded, among other things, by the accumulation boundary's flag (Coqui's Trainer).
STEP_FLAG_SCHEDULER = (
    "def optimize(self, batch, optimizer, scheduler, step_optimizer):\n"
    "    loss = self.model(batch)\n"
    "    loss.backward()\n"
    "    if step_optimizer:\n"
    "        optimizer.step()\n"
    "    if scheduler is not None and not self.config.scheduler_after_epoch and step_optimizer:\n"
    "        scheduler.step()\n"
    "    if step_optimizer:\n"
    "        optimizer.zero_grad()\n"
)

# Per-epoch schedulers in a list, each checked for None, after the batch loop (Coqui's Trainer).
GUARDED_SCHEDULER_LIST = (
    "class Trainer:\n"
    "    def train_epoch(self):\n"
    "        for batch in self.train_loader:\n"
    "            self.optimizer.zero_grad()\n"
    "            self.model(batch).backward()\n"
    "            self.optimizer.step()\n"
    "        if self.schedulers is not None and self.config.scheduler_after_epoch:\n"
    "            for scheduler in self.schedulers:\n"
    "                if scheduler is not None:\n"
    "                    scheduler.step()\n"
)

# An L-BFGS step through a distributed strategy, handed the optimizer and the closure (Ludwig's trainer).
ENGINE_CLOSURE_STEP = (
    "class Trainer:\n"
    "    def train_step(self, inputs, targets):\n"
    "        def closure():\n"
    "            self.optimizer.zero_grad()\n"
    "            loss = self.loss(self.model(inputs), targets)\n"
    "            self.distributed.backward(loss, self.model)\n"
    "            return loss\n"
    "        self.distributed.step(self.optimizer, closure)\n"
)

# A kvstore client handed the rate its servers update the embeddings with (DGL-KE).
RATE_SETTER = (
    "def connect(args):\n"
    "    client = KGEClient(server_namebook=read_ip_config(args.ip_config))\n"
    "    client.set_clr(args.lr)\n"
    "    client.connect()\n"
    "    return client\n"
)

# A forward under a grad switch that training and force derivatives turn on, the loss summed after it
# (TorchMD-Net's LNNP).
GRAD_BY_STAGE = (
    "import torch\n"
    "class Potential(LightningModule):\n"
    "    def step(self, batch, stage):\n"
    '        with torch.set_grad_enabled(stage == "train" or self.derivative):\n'
    "            energy, forces = self(batch.z, batch.pos, batch=batch.batch)\n"
    "        loss = self.energy_loss(energy, batch.y) + self.force_loss(forces, batch.neg_dy)\n"
    "        return loss\n"
    "    def training_step(self, batch, batch_idx):\n"
    '        return self.step(batch, "train")\n'
)

# A model whose sparse embeddings update themselves after the backward (DGL-KE's Hogwild workers).
MODEL_OWN_UPDATE = (
    "def train(model, sampler, gpu_id, max_step):\n"
    "    for step in range(max_step):\n"
    "        pos_g, neg_g = next(sampler)\n"
    "        loss, log = model.forward(pos_g, neg_g, gpu_id)\n"
    "        loss.backward()\n"
    "        model.update(gpu_id)\n"
)

# A moving average of the loss kept in an entry that the next step mixes back in (TorchMD-Net's LNNP).
LOSS_AVERAGE_ENTRY = (
    "class Potential(LightningModule):\n"
    "    def smoothed(self, stage, name, loss):\n"
    "        ema = self.ema[stage][name] if name in self.ema[stage] else loss.detach()\n"
    "        loss = self.alpha * loss + (1 - self.alpha) * ema\n"
    "        self.ema[stage][name] = loss.detach()\n"
    "        return loss\n"
)

# A Lightning scheduler config built under a name and appended to the returned list (SchNetPack's AtomisticTask).
APPENDED_SCHEDULER_CONFIG = (
    "class Task(LightningModule):\n"
    "    def configure_optimizers(self):\n"
    "        optimizer = self.optimizer_cls(params=self.parameters(), **self.optimizer_kwargs)\n"
    "        schedulers = []\n"
    "        schedule = self.scheduler_cls(optimizer=optimizer, **self.scheduler_kwargs)\n"
    '        optimconf = {"scheduler": schedule, "name": "lr_schedule"}\n'
    "        schedulers.append(optimconf)\n"
    "        return [optimizer], schedulers\n"
)

# A training step that picks a random subset of its windows (neuralforecast's BaseModel).
WINDOW_PICK_STEP = (
    "import torch\n"
    "class Forecaster(LightningModule):\n"
    "    def training_step(self, batch, batch_idx):\n"
    "        windows = self.make_windows(batch)\n"
    "        idx = torch.randperm(len(windows))[: self.windows_batch_size]\n"
    "        loss = self.loss(self(windows[idx]))\n"
    "        return loss\n"
)

# A fit() whose `shuffle_train` default reaches the data module it builds (neuralforecast).
SHUFFLE_TRAIN_DEFAULT = (
    "def fit(self, dataset, batch_size, shuffle_train=True):\n"
    "    datamodule_class = TimeSeriesDataModule\n"
    "    datamodule = datamodule_class(dataset=dataset, batch_size=batch_size, shuffle_train=shuffle_train)\n"
    "    self.trainer.fit(self, datamodule=datamodule)\n"
)

# A sampler class picked into a name and handed to the training dataset (PyTorchVideo's Kinetics).
HANDED_SAMPLER_CLASS = (
    "def train_dataloader(self):\n"
    "    sampler = DistributedSampler if self.trainer.use_ddp else RandomSampler\n"
    "    dataset = Kinetics(data_path=self.train_path, video_sampler=sampler)\n"
    "    return torch.utils.data.DataLoader(dataset, batch_size=self.batch_size)\n"
)

# A training batcher told to shuffle by a setting (Ludwig's trainer).
SHUFFLING_BATCHER = (
    "def train(self, training_set):\n"
    "    with training_set.initialize_batcher(batch_size=self.batch_size, should_shuffle=self.should_shuffle) as batcher:\n"
    "        while not batcher.last_batch():\n"
    "            self.train_step(batcher.next_batch())\n"
)

# A step that returns a record of its figures to the caller (PyTorch-BigGraph's Trainer).
RETURNED_STATS_RECORD = (
    "class Trainer:\n"
    "    def process_batch(self, model, edges):\n"
    "        self.optimizer.zero_grad()\n"
    "        loss = self.loss_fn(model(edges))\n"
    "        stats = Stats(loss=float(loss), count=len(edges))\n"
    "        loss.backward()\n"
    "        self.optimizer.step()\n"
    "        return stats\n"
)

# A step that hands the scaler to a clipping helper which unscales first (Coqui's Trainer).
SCALER_HANDED_TO_CLIPPING = (
    "class Trainer:\n"
    "    def clip(self, optimizer, scaler):\n"
    "        if scaler:\n"
    "            scaler.unscale_(optimizer)\n"
    "        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)\n"
    "    def step(self, loss, optimizer, scaler):\n"
    "        scaler.scale(loss).backward()\n"
    "        self.clip(optimizer=optimizer, scaler=scaler)\n"
    "        scaler.step(optimizer)\n"
    "        scaler.update()\n"
)

# A validation loop whose batches meet the other ranks in an all-reduce (Horovod's metrics).
REDUCED_VALIDATION_LOOP = (
    "import torch.distributed as dist\n"
    "def validate(model, val_loader):\n"
    "    total = 0.0\n"
    "    with torch.no_grad():\n"
    "        for data, target in val_loader:\n"
    "            loss = F.cross_entropy(model(data), target)\n"
    "            dist.all_reduce(loss)\n"
    "            total += loss.item()\n"
    "    return total\n"
)

# A training step whose logged accuracy reads softmax probabilities (PyTorchVideo's tutorial).
LOGGED_ACCURACY_STEP = (
    "import torch.nn.functional as F\n"
    "class Classifier(LightningModule):\n"
    "    def training_step(self, batch, batch_idx):\n"
    '        y_hat = self.model(batch["video"])\n'
    '        loss = F.cross_entropy(y_hat, batch["label"])\n'
    '        acc = self.train_accuracy(F.softmax(y_hat, dim=-1), batch["label"])\n'
    '        self.log("train_acc", acc)\n'
    "        return loss\n"
)

# A distributed strategy that builds the optimizer with the rate it is handed (Ludwig's trainer).
OPTIMIZER_MAKER_RATE = (
    "def setup(self):\n"
    "    self.dist_model, self.optimizer = self.distributed.prepare(self.model, self.config, self.base_learning_rate)\n"
)

# A batch split by a method of the model into its inputs and targets (Tacotron 2's `parse_batch`).
PARSED_BATCH_STEP = (
    "import torch\n"
    "\n"
    "from model import Tacotron2\n"
    "from loss_function import Tacotron2Loss\n"
    "\n"
    "\n"
    "def train(hparams, loader):\n"
    "    model = Tacotron2(hparams)\n"
    "    criterion = Tacotron2Loss()\n"
    "    optimizer = torch.optim.Adam(model.parameters(), lr=hparams.learning_rate)\n"
    "    model.train()\n"
    "    for batch in loader:\n"
    "        model.zero_grad()\n"
    "        x, y = model.parse_batch(batch)\n"
    "        y_pred = model(x)\n"
    "        loss = criterion(y_pred, y)\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)
