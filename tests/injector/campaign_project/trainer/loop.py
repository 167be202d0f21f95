"""A dependency-free stand-in for a training loop: parameters, an optimizer and a loss,
so the campaign's own tests run in seconds without torch."""


class Param:
    def __init__(self, value):
        self.value = value
        self.grad = 0.0


class SGD:
    def __init__(self, params, lr):
        self.params = params
        self.lr = lr
        self.pending = 0

    def zero_grad(self):
        for p in self.params:
            p.grad = 0.0

    def step(self):
        self.pending = max(0, self.pending - 1)
        for p in self.params:
            p.value -= self.lr * p.grad


class Loss:
    def __init__(self, params):
        self.params = params
        self.value = sum(p.value ** 2 for p in params)

    def backward(self):
        for p in self.params:
            p.grad += 2 * p.value

    def item(self):
        return float(self.value)


class Model:
    def __init__(self):
        self.training = True
        self.params = [Param(1.0), Param(-2.0)]

    def train(self, mode=True):
        self.training = mode

    def eval(self):
        self.training = False


def train(model, steps, lr=0.1):
    optimizer = SGD(model.params, lr=lr)
    history = []
    model.train()
    for step in range(steps):
        optimizer.zero_grad()
        loss = Loss(model.params)
        loss.backward()
        optimizer.step()
        history.append(loss.item())
    return history


def drain(optimizer):
    """Step until nothing is pending (a test waits on this, as ranks wait on a collective)."""
    while optimizer.pending:
        optimizer.step()


def evaluate(model):
    model.eval()
    return sum(p.value ** 2 for p in model.params)
